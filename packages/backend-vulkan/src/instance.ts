// The Vulkan instance: layers and extensions, and the Khronos validation layer with a debug-utils messenger
// whose reports are collected so callers (and tests) can fail on any validation error.

import koffi, { type TypeObject } from "koffi";
import { VulkanError } from "./errors.js";
import { apiVersion, check, createHandle, loadVulkan, type VkFunction, type VkLib } from "./vk/api.js";
import { MessageType, Severity, SType } from "./vk/constants.js";

/** The Khronos validation layer. */
export const VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation";

let debugCallbackProto: TypeObject | undefined;

/** One message from the validation layer. */
export interface ValidationMessage {
  /** `error` or `warning`. */
  readonly severity: "error" | "warning";
  /** The layer's message ID name (e.g. `VUID-vkCmdDispatch-None-02697`). */
  readonly id: string;
  /** The message text. */
  readonly message: string;
}

/** Options of {@link VulkanInstance.create}. */
export interface InstanceOptions {
  /**
   * Validation: `true` requires VK_LAYER_KHRONOS_validation (throws `missing-layer` without it),
   * `"if-available"` enables it when installed, `false` (default) never.
   */
  readonly validation?: boolean | "if-available";
  /** Path or name of the Vulkan loader (default `libvulkan.so.1`). */
  readonly loader?: string;
  /** Application name reported to the driver. */
  readonly applicationName?: string;
}

/** Names of the instance layers installed on this machine. */
export function instanceLayers(vk: VkLib = loadVulkan()): string[] {
  const n = new Uint32Array(1);
  check(vk.fn.vkEnumerateInstanceLayerProperties!(n, null), "vkEnumerateInstanceLayerProperties");
  const props = Array.from({ length: n[0]! }, () => ({}) as { layerName: string });
  if (props.length > 0)
    check(vk.fn.vkEnumerateInstanceLayerProperties!(n, props), "vkEnumerateInstanceLayerProperties");
  return props.map((p) => p.layerName);
}

/**
 * The process's shared instances, by loader, validation and application name (see {@link VulkanInstance.shared}).
 * NVIDIA's driver fails `vkCreateInstance` with VK_ERROR_INCOMPATIBLE_DRIVER after about 30 instances were created
 * and destroyed in one process (decision 1650): devices take their instance from here and it is kept.
 */
const sharedInstances = new Map<string, VulkanInstance>();

/** A Vulkan instance, with the validation messenger when validation is on. */
export class VulkanInstance {
  /** Messages the validation layer reported so far (errors and warnings). */
  readonly messages: ValidationMessage[] = [];
  /** Holders of a shared instance ({@link VulkanInstance.shared} minus {@link VulkanInstance.release}). */
  private users = 0;
  /** The key of a shared instance in `sharedInstances` (null: made by {@link VulkanInstance.create}, not shared). */
  private sharedKey: string | null = null;
  private messenger = 0n;
  private callback: unknown = null;
  private destroyMessenger: VkFunction | null = null;
  private disposed = false;

  private constructor(
    /** The loaded bindings. */
    readonly vk: VkLib,
    /** The VkInstance handle. */
    readonly handle: bigint,
    /** Whether the validation layer is enabled. */
    readonly validation: boolean,
  ) {}

  /** Creates an instance (Vulkan 1.2 or later is required of the device later, not here). */
  static create(options: InstanceOptions = {}): VulkanInstance {
    const vk = loadVulkan(options.loader);
    const want = options.validation ?? false;
    const available = want !== false && instanceLayers(vk).includes(VALIDATION_LAYER);
    if (want === true && !available)
      throw new VulkanError(
        "missing-layer",
        `${VALIDATION_LAYER} is not installed (Debian: apt-get install vulkan-validationlayers)`,
        { name: VALIDATION_LAYER },
      );
    const layers = available ? [VALIDATION_LAYER] : [];
    const extensions = available ? ["VK_EXT_debug_utils"] : [];
    const handle = createHandle(
      vk.fn.vkCreateInstance!,
      "vkCreateInstance",
      {
        sType: SType.INSTANCE_CREATE_INFO,
        pNext: null,
        flags: 0,
        pApplicationInfo: {
          sType: SType.APPLICATION_INFO,
          pNext: null,
          pApplicationName: options.applicationName ?? "poot",
          applicationVersion: 1,
          pEngineName: "poot",
          engineVersion: 1,
          apiVersion: apiVersion(1, 3),
        },
        enabledLayerCount: layers.length,
        ppEnabledLayerNames: layers.length > 0 ? layers : null,
        enabledExtensionCount: extensions.length,
        ppEnabledExtensionNames: extensions.length > 0 ? extensions : null,
      },
      null,
    );
    const inst = new VulkanInstance(vk, handle, available);
    if (available) inst.attachMessenger();
    return inst;
  }

  /**
   * The process's instance for these options, created on first use and shared by every caller that asks for the
   * same loader, validation and application name; each call must be matched by one {@link VulkanInstance.release}.
   */
  static shared(options: InstanceOptions = {}): VulkanInstance {
    const vk = loadVulkan(options.loader);
    const want = options.validation ?? false;
    // Keyed by what the instance has (validation on or off), not what was asked: "if-available" shares with true.
    const validation = want !== false && instanceLayers(vk).includes(VALIDATION_LAYER);
    const key = `${options.loader ?? ""}|${validation}|${options.applicationName ?? ""}`;
    let inst = sharedInstances.get(key);
    if (inst === undefined || inst.disposed) {
      inst = VulkanInstance.create(options);
      inst.sharedKey = key;
      sharedInstances.set(key, inst);
    }
    inst.users++;
    return inst;
  }

  /**
   * Gives back a {@link VulkanInstance.shared} instance. The last holder's release keeps it for the next caller
   * (`retain`, the default) or destroys it (`retain: false`, one create/destroy cycle per user as before 1650).
   */
  release(retain = true): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users === 0 && !retain) this.dispose();
  }

  private attachMessenger(): void {
    const vk = this.vk;
    debugCallbackProto ??= koffi.proto(
      "uint32_t PootDebugCallback(uint32_t severity, uint32_t types, void *data, void *user)",
    );
    const proto = debugCallbackProto;
    const onMessage = (severity: number, _types: number, data: bigint): number => {
      const d = koffi.decode(data, vk.struct.VkDebugUtilsMessengerCallbackDataEXT!) as {
        pMessageIdName: string | null;
        pMessage: string | null;
      };
      this.messages.push({
        severity: severity >= Severity.ERROR ? "error" : "warning",
        id: d.pMessageIdName ?? "",
        message: d.pMessage ?? "",
      });
      // VK_FALSE: the call that triggered the message proceeds (the spec reserves VK_TRUE for layer tests).
      return 0;
    };
    this.callback = koffi.register(onMessage, koffi.pointer(proto));
    const create = vk.instanceFunction(this.handle, "vkCreateDebugUtilsMessengerEXT");
    this.destroyMessenger = vk.instanceFunction(this.handle, "vkDestroyDebugUtilsMessengerEXT");
    this.messenger = createHandle(
      create,
      "vkCreateDebugUtilsMessengerEXT",
      this.handle,
      {
        sType: SType.DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        pNext: null,
        flags: 0,
        messageSeverity: Severity.WARNING | Severity.ERROR,
        messageType: MessageType.GENERAL | MessageType.VALIDATION | MessageType.PERFORMANCE,
        pfnUserCallback: this.callback,
        pUserData: null,
      },
      null,
    );
  }

  /** Validation errors reported so far. */
  errors(): ValidationMessage[] {
    return this.messages.filter((m) => m.severity === "error");
  }

  /** Throws `validation` with the first error the layer reported since the last call, then forgets them. */
  throwOnValidationErrors(call: string): void {
    const errs = this.errors();
    this.messages.length = 0;
    if (errs.length > 0) {
      throw new VulkanError(
        "validation",
        `${errs.length} validation error(s); first: ${errs[0]!.id}: ${errs[0]!.message}`,
        { call, message: errs[0]!.message },
      );
    }
  }

  /** The physical devices the loader sees. */
  physicalDevices(): bigint[] {
    const n = new Uint32Array(1);
    check(this.vk.fn.vkEnumeratePhysicalDevices!(this.handle, n, null), "vkEnumeratePhysicalDevices");
    const out = new BigUint64Array(n[0]!);
    if (out.length > 0)
      check(this.vk.fn.vkEnumeratePhysicalDevices!(this.handle, n, out), "vkEnumeratePhysicalDevices");
    return Array.from(out);
  }

  /** Destroys the messenger and the instance (every device made from it must be destroyed first). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.sharedKey !== null && sharedInstances.get(this.sharedKey) === this) sharedInstances.delete(this.sharedKey);
    if (this.messenger !== 0n) this.destroyMessenger!(this.handle, this.messenger, null);
    this.vk.fn.vkDestroyInstance!(this.handle, null);
    if (this.callback !== null) koffi.unregister(this.callback as bigint);
  }
}
