// Identifier spelling for WGSL: IR names that are WGSL keywords, builtin functions or names this target
// generates itself are renamed, so any valid kernel IR prints as valid WGSL.

// WGSL keywords, reserved words likely as kernel names, builtin functions and types, and this target's own
// generated names: an IR name in this set gets a trailing underscore.
const RESERVED = new Set(
  (
    "alias break case const const_assert continue continuing default diagnostic discard else enable false fn for if let " +
    "loop override requires return struct switch true var while array atomic bool f16 f32 i32 u32 mat2x2 mat3x3 mat4x4 " +
    "ptr sampler texture_2d vec2 vec3 vec4 vec2f vec3f vec4f vec2u vec4u vec2i vec4i self super this target type typedef " +
    "abs acos all any asin atan ceil clamp cos cosh cross degrees distance dot exp exp2 floor fma fract frexp inverseSqrt " +
    "ldexp length log log2 max min mix modf normalize pow radians reflect round saturate select sign sin sinh smoothstep " +
    "sqrt step tan tanh transpose trunc bitcast storage uniform workgroup private function read write read_write " +
    "filter buffer sample texture handle attribute layout module namespace new null unsafe " +
    "gid lid wid nwg lidx sg_lane sg_size params Params packed_inputs bf16_bits erf_f32 f32_to_i32 f32_to_u32"
  ).split(" "),
);

/** The WGSL spelling of an IR name. */
export function wgslIdent(name: string): string {
  return RESERVED.has(name) || /^(ld|st)_/.test(name) ? `${name}_` : name;
}
