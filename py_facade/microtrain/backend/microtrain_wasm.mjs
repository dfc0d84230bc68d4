// microtrain's backend interface (py_facade/microtrain/backend/__init__.py) on the core compiled
// to wasm32 (CMake preset wasm32-wasi), for MicroPython running in JavaScript.
//
//   import { loadCore } from ".../microtrain/backend/microtrain_wasm.mjs";
//   const core = await loadCore("build/presets/wasm32-wasi/micro_core/microtrain.wasm");
//   mp.registerJsModule("_microtrain_js", core.module(mp));
//   # MicroPython: microtrain.backend.js_backend wraps _microtrain_js.create()
//
// Every backend object gets its own instance of the module (its own linear memory), laid out
// like a firmware's RAM: the core never allocates, so this file places everything from
// __heap_base up and grows memory to fit:
//
//   __heap_base | scratch: out-params, config, plan, mask | image (16-aligned) | arena (16-aligned)
//               | transfer area (probes, checkpoints, export, properties), placed after all per call
//
// The structs' wasm32 offsets come from microtrain_wasm_abi.mjs (generated from
// micro_core/abi/microtrain_abi.json by tools/gen_abi.py); every size is compared with
// mt_struct_size() when an instance starts. Checkpoints and export: microtrain_wasm_checkpoints.mjs.
//
// JavaScript exceptions do not become Python exceptions, so no method throws for a failing
// core call: each sets `status` (an mt_status, 0 when fine), `message`, `function` and, when
// the failure concerns an op, `op_index` / `op_type`; microtrain.backend.js_backend raises
// MicrotrainError from them.

import { readFile } from "node:fs/promises";
import { MT, MT_ABI_VERSION, PLAN_FIELDS, STRUCTS } from "./microtrain_wasm_abi.mjs";
import { checkpointMethods } from "./microtrain_wasm_checkpoints.mjs";
import { WEIGHT_TYPES, weightMethods } from "./microtrain_wasm_weights.mjs";

export const ARENA_ALIGN = MT.MT_ARENA_ALIGN;
const SCRATCH_BYTES = 2048;         // out-params, mt_train_config, mt_memory_plan, op mask, channels
const ERROR_OFFSET = 192;           // mt_error_detail in scratch
const CONFIG_OFFSET = 256;          // mt_train_config in scratch
const PLAN_OFFSET = 384;            // mt_memory_plan in scratch
const MASK_OFFSET = 512;            // trainable_op_mask bytes (MT_MAX_OPS) in scratch
const CHANNELS_OFFSET = 1024;       // trainable_op_channels int32 (MT_MAX_OPS) in scratch
const PAGE = 65536;
const KIND_INPUT = 0;
const KIND_TARGET = 1;

export const alignUp = (value, alignment) => Math.ceil(value / alignment) * alignment;

export class CoreError extends Error {
  constructor(status, message, fn) {
    super(message);
    this.status = status;
    this.fn = fn;
  }
}

const GETTERS = { i32: "getInt32", u32: "getUint32", f32: "getFloat32", f64: "getFloat64", i64: "getBigInt64" };
const SETTERS = { i32: "setInt32", u32: "setUint32", f32: "setFloat32", f64: "setFloat64", i64: "setBigInt64" };

class WasmBackend {
  constructor(wasmModule, toJs) {
    this.instance = new WebAssembly.Instance(wasmModule, {});
    this.core = this.instance.exports;
    this.toJs = toJs;
    this.scratch = alignUp(this.core.__heap_base.value, ARENA_ALIGN);
    this.image = 0;                 // the session's image, or a pending plan's
    this.imageBytes = 0;
    this.probeEnd = 0;              // end of an image a plan placed past a session's memory
    this.arenaEnd = 0;
    this.session = 0;
    this.status = 0;
    this.message = "";
    this.function = "";
    this.op_index = -1;
    this.op_type = 0;
    this.loss = 0;
    if (this.core.mt_abi_version() !== MT_ABI_VERSION) {
      throw new Error(`microtrain.wasm has ABI ${this.core.mt_abi_version()}, this file ${MT_ABI_VERSION}`);
    }
    for (const [name, { which, size }] of Object.entries(STRUCTS)) {
      if (this.core.mt_struct_size(which) !== size) {
        throw new Error(`${name}: ${this.core.mt_struct_size(which)} bytes in microtrain.wasm, ${size} here`);
      }
    }
  }

  // ------------------------------------------------------------ memory

  view() { return new DataView(this.core.memory.buffer); }
  bytes(pointer, length) { return new Uint8Array(this.core.memory.buffer, pointer, length); }

  // Field `field` of the struct `struct` at `base` (element `index` of an array field).
  get(base, struct, field, index = 0) {
    const [offset, kind] = STRUCTS[struct].fields[field];
    const width = kind === "f64" || kind === "i64" ? 8 : 4;
    return this.view()[GETTERS[kind]](base + offset + width * index, true);
  }

  set(base, struct, field, value) {
    const [offset, kind] = STRUCTS[struct].fields[field];
    this.view()[SETTERS[kind]](base + offset, value, true);
  }

  reserve(end) {
    const memory = this.core.memory;
    if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / PAGE));
  }

  cString(pointer) {
    const bytes = new Uint8Array(this.core.memory.buffer, pointer);
    let end = 0;
    while (bytes[end] !== 0) end++;
    return new TextDecoder().decode(bytes.subarray(0, end));
  }

  check(status, fn) {
    if (status !== 0) throw new CoreError(status, this.cString(this.core.mt_status_str(status)), fn);
  }

  // A Python bytes object (a proxy: iterate it) or a JS Uint8Array, as a Uint8Array.
  asBytes(value) {
    return value instanceof Uint8Array ? value : Uint8Array.from(value);
  }

  // The image of a plan at a 16-aligned address after the scratch area; past everything when a
  // session is open, so the session's image and arena stay as they are. Returns [address, bytes].
  placePlannedImage(image) {
    const bytes = this.asBytes(image);
    const at = this.session ? this.transfer(bytes.length) : alignUp(this.scratch + SCRATCH_BYTES, ARENA_ALIGN);
    this.reserve(at + bytes.length);
    this.bytes(at, bytes.length).set(bytes);
    if (this.session) {
      this.probeEnd = at + bytes.length;
    } else {
      this.image = at;
      this.imageBytes = bytes.length;
    }
    return [at, bytes.length];
  }

  // A transfer area of `length` bytes after everything else (the session's image and arena, a
  // planned image), for one call.
  transfer(length) {
    const end = Math.max(this.arenaEnd, this.image + this.imageBytes, this.probeEnd, this.scratch + SCRATCH_BYTES);
    const start = alignUp(end, ARENA_ALIGN);
    this.reserve(start + length);
    return start;
  }

  // The configuration (a JS object of CONFIG_FIELDS) as an mt_train_config in scratch.
  writeConfig(cfg) {
    const pointer = this.scratch + CONFIG_OFFSET;
    this.core.mt_train_config_init(pointer);
    for (const name of Object.keys(STRUCTS.mt_train_config.fields)) {
      if (name === "trainable_op_mask" || name === "trainable_op_channels" || cfg[name] === undefined ||
          cfg[name] === null) continue;
      this.set(pointer, "mt_train_config", name, Number(cfg[name]));
    }
    const mask = cfg.trainable_op_mask;
    if (mask !== undefined && mask !== null) {
      const bytes = this.bytes(this.scratch + MASK_OFFSET, MT.MT_MAX_OPS);
      bytes.fill(0);
      mask.forEach((bit, op) => { bytes[op] = bit ? 1 : 0; });
      this.set(pointer, "mt_train_config", "trainable_op_mask", this.scratch + MASK_OFFSET);
    }
    const channels = cfg.trainable_op_channels;
    if (channels !== undefined && channels !== null) {
      const view = new DataView(this.core.memory.buffer, this.scratch + CHANNELS_OFFSET, 4 * MT.MT_MAX_OPS);
      for (let op = 0; op < MT.MT_MAX_OPS; ++op) view.setInt32(4 * op, op < channels.length ? channels[op] : -1, true);
      this.set(pointer, "mt_train_config", "trainable_op_channels", this.scratch + CHANNELS_OFFSET);
    }
    return pointer;
  }

  // Run `body`, turning failures into status/message/function; returns its value or null.
  guard(body) {
    this.status = 0;
    this.message = "";
    this.function = "";
    this.op_index = -1;
    this.op_type = 0;
    try {
      return body();
    } catch (error) {
      this.status = error instanceof CoreError ? error.status : -1;
      this.message = error.message;
      this.function = error instanceof CoreError ? error.fn : "microtrain_wasm.mjs";
      this.noteOp(error);
      return null;
    }
  }

  // The op a failure concerns, from mt_model_diagnose / mt_session_last_error when present.
  noteOp(error) {
    if (!(error instanceof CoreError)) return;
    const detail = this.scratch + ERROR_OFFSET;
    const ofSession = (error.fn.startsWith("mt_session_") || error.fn.startsWith("mt_checkpoint")) &&
                      error.fn !== "mt_session_init_from_plan";
    if (ofSession) {
      if (!this.session) return;
      this.core.mt_session_last_error(this.session, detail);
    } else {
      const [image, imageBytes] = this.probe || [this.image, this.imageBytes];
      if (!image) return;
      this.core.mt_model_diagnose(image, imageBytes, this.lastConfig || 0, detail);
    }
    if (this.get(detail, "mt_error_detail", "status") === error.status) {
      this.op_index = this.get(detail, "mt_error_detail", "op_index");
      this.op_type = this.get(detail, "mt_error_detail", "op_type");
    }
  }

  requireSession() {
    if (!this.session) throw new CoreError(MT.MT_ERR_STATE, "the backend has no session: call open() first", "open");
  }

  // ------------------------------------------------------------ model

  describe(image) {
    return this.guard(() => {
      this.lastConfig = 0;
      const bytes = this.asBytes(image);
      const image_ = this.transfer(bytes.length);   // past a session's and a plan's memory
      this.bytes(image_, bytes.length).set(bytes);
      const imageBytes = bytes.length;
      this.probe = [image_, imageBytes];
      const info = this.scratch;          // mt_model_info
      const index = this.scratch + 128;
      this.check(this.core.mt_model_check(image_, imageBytes, info), "mt_model_check");
      const numTensors = this.get(info, "mt_model_info", "num_tensors");
      const numOps = this.get(info, "mt_model_info", "num_ops");
      // the whole tables in one call each, past the probed image (a call per entry validated
      // the whole image per entry)
      const tensorBytes = STRUCTS.mt_tensor_info.size, opBytes = STRUCTS.mt_op_info.size;
      const tensors = alignUp(image_ + imageBytes, ARENA_ALIGN);
      const opTable = alignUp(tensors + tensorBytes * numTensors, ARENA_ALIGN);
      this.reserve(opTable + opBytes * numOps);
      this.check(this.core.mt_model_tensors(image_, imageBytes, 0, numTensors, tensors), "mt_model_tensors");
      this.check(this.core.mt_model_ops(image_, imageBytes, 0, numOps, opTable), "mt_model_ops");
      const readTensor = (i) => {
        const tensor = tensors + tensorBytes * i;
        const dims = [];
        for (let d = 0; d < this.get(tensor, "mt_tensor_info", "ndim"); d++) {
          dims.push(this.get(tensor, "mt_tensor_info", "dims", d));
        }
        return { dims, dtype: this.get(tensor, "mt_tensor_info", "dtype"),
                 flags: this.get(tensor, "mt_tensor_info", "flags"),
                 offset: this.get(tensor, "mt_tensor_info", "data_offset") };
      };
      const io = (isOutput, count) => {
        const entries = [];
        for (let p = 0; p < count; p++) {
          this.check(this.core.mt_model_io(image_, imageBytes, isOutput, p, index), "mt_model_io");
          const t = this.view().getInt32(index, true);
          entries.push({ tensor: t, dims: readTensor(t).dims });
        }
        return entries;
      };
      const params = [];
      const quantized = []; // int8 weights and int32 biases trained in place (a scheme's channels)
      const trainable = new Set();
      for (let i = 0; i < numTensors; i++) {
        const t = readTensor(i);
        const isTrainable = Boolean(t.flags & MT.MT_TENSOR_TRAINABLE);
        if (isTrainable) trainable.add(i);
        if (isTrainable && t.dtype !== MT.MT_DTYPE_F32) quantized.push({ tensor: i, dims: t.dims });
        // the weights (params()): CONST f32 tensors and the TRAINABLE int8 weights and int32
        // biases of int8 layers trained in place, in table order
        if ((t.flags & MT.MT_TENSOR_CONST) && (t.dtype === MT.MT_DTYPE_F32 || isTrainable)) {
          params.push({ tensor: i, dims: t.dims, offset: t.offset, trainable: isTrainable,
                        dtype: WEIGHT_TYPES[t.dtype].name });
        }
      }
      const ops = [];
      for (let o = 0; o < numOps; o++) {
        const op = opTable + opBytes * o;
        const field = (name, index) => this.get(op, "mt_op_info", name, index);
        const inputs = [], outputs = [];
        for (let k = 0; k < field("num_inputs"); k++) inputs.push(field("inputs", k));
        for (let k = 0; k < field("num_outputs"); k++) outputs.push(field("outputs", k));
        ops.push({ type: field("type"), layer: field("layer"), inputs, outputs,
                   weights: inputs.some((i) => trainable.has(i)) });
      }
      return { num_ops: numOps, num_tensors: numTensors,
               inputs: io(0, this.get(info, "mt_model_info", "num_inputs")),
               outputs: io(1, this.get(info, "mt_model_info", "num_outputs")), params, quantized, ops };
    });
  }

  // The plan: its figures, and under `binding` what open() needs (the image's place, the C
  // plan's bytes, the configuration). Valid for open() of this backend object.
  plan(image, config) {
    return this.guard(() => {
      const [image_, imageBytes] = this.placePlannedImage(image);
      this.probe = [image_, imageBytes];
      const cfg = this.toJs(config);
      const plan = this.scratch + PLAN_OFFSET;
      this.lastConfig = this.writeConfig(cfg);
      this.check(this.core.mt_plan(image_, imageBytes, this.lastConfig, plan), "mt_plan");
      const result = {};
      for (const name of PLAN_FIELDS) result[name] = this.get(plan, "mt_memory_plan", name);
      result.binding = { owner: this, image: image_, imageBytes,
                         plan: this.bytes(plan, STRUCTS.mt_memory_plan.size).slice(), config: cfg };
      return result;
    });
  }

  // ------------------------------------------------------------ session

  open(binding) {
    return this.guard(() => {
      if (!binding || binding.owner !== this) {
        throw new CoreError(MT.MT_ERR_BAD_ARGUMENT, "open() takes a plan this backend's plan() made", "open");
      }
      this.session = 0;
      this.probe = null;
      this.probeEnd = 0;
      this.image = binding.image;
      this.imageBytes = binding.imageBytes;
      const cfgPointer = this.writeConfig(binding.config);
      this.lastConfig = cfgPointer;
      const planPointer = this.scratch + PLAN_OFFSET;
      this.bytes(planPointer, binding.plan.length).set(binding.plan);
      const totalBytes = this.get(planPointer, "mt_memory_plan", "total_bytes");
      const arena = alignUp(this.image + this.imageBytes, ARENA_ALIGN);
      this.reserve(arena + totalBytes);
      this.arena = arena;
      this.arenaBytes = totalBytes;
      this.arenaEnd = arena + totalBytes;
      const sessionOut = this.scratch + 128;
      // laid out from the plan: the image was validated and planned once, by plan()
      this.check(this.core.mt_session_init_from_plan(sessionOut, planPointer, cfgPointer, arena, totalBytes),
                 "mt_session_init_from_plan");
      this.session = this.view().getUint32(sessionOut, true);
      this.batchSize = this.get(cfgPointer, "mt_train_config", "batch_size");
      const buffers = (getter) => {
        const list = [];
        for (let p = 0; getter(this.session, p, this.scratch, this.scratch + 4) === 0; p++) {
          const v = this.view();
          list.push({ pointer: v.getUint32(this.scratch, true), count: v.getInt32(this.scratch + 4, true) });
        }
        return list;
      };
      this.inputs = buffers(this.core.mt_session_input);
      // rows are written as floats: an int8 input (image version 3: B·D bytes) is refused
      const info = this.scratch + 8;      // mt_tensor_info, from the session (no validation)
      for (let p = 0; this.core.mt_session_io(this.session, 0, p, info) === 0; p++) {
        if (this.get(info, "mt_tensor_info", "dtype") === MT.MT_DTYPE_I8) {
          throw new Error("input " + p + " is int8 (a quantized image): the wasm backend writes float rows; " +
                          "use the ctypes backend or the C API");
        }
      }
      this.outputs = buffers(this.core.mt_session_output);
      this.check(this.core.mt_session_target(this.session, this.scratch, this.scratch + 4), "mt_session_target");
      const v = this.view();
      this.target = { pointer: v.getUint32(this.scratch, true), count: v.getInt32(this.scratch + 4, true) / 4 };
      this.sparse = binding.config.loss === MT.MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
      return null;
    });
  }

  close() {
    this.session = 0;
    this.inputs = this.outputs = this.target = null;
    this.arenaEnd = 0;
    this.probeEnd = 0;
    return null;
  }

  // ------------------------------------------------------------ rows

  // values: a Python array('f') / array('i') / list (a proxy: iterate it) or a JS array.
  write_rows(kind, position, firstRow, values) {
    return this.guard(() => {
      this.requireSession();
      if (kind !== KIND_INPUT && kind !== KIND_TARGET) throw new Error(`unknown row kind ${kind}`);
      const buffer = kind === KIND_INPUT ? this.inputs[position] : this.target;
      if (!buffer) throw new Error(`no input ${position}`);
      const rowWidth = buffer.count / this.batchSize;
      const Typed = kind === KIND_TARGET && this.sparse ? Int32Array : Float32Array;
      const target = new Typed(this.core.memory.buffer, buffer.pointer, buffer.count);
      let i = firstRow * rowWidth;
      for (const value of values) {
        if (i >= buffer.count) throw new Error(`rows from ${firstRow} overflow a buffer of ${buffer.count} values`);
        target[i++] = value;
      }
      return i - firstRow * rowWidth;
    });
  }

  read_rows(output, n) {
    return this.guard(() => {
      this.requireSession();
      const buffer = this.outputs[output];
      const values = (buffer.count / this.batchSize) * n;
      return Array.from(new Float32Array(this.core.memory.buffer, buffer.pointer, values));
    });
  }

  // ------------------------------------------------------------ steps

  step(name, n) {
    return this.guard(() => {
      this.requireSession();
      const loss = this.scratch + 8;
      this.view().setFloat32(loss, NaN, true);
      const status = this.core[name](this.session, n, loss);
      this.loss = this.view().getFloat32(loss, true);
      this.check(status, name);
      return this.loss;
    });
  }

  train_step(n) { return this.step("mt_session_train_step", n); }
  accumulate(n) { return this.step("mt_session_accumulate", n); }
  eval_step(n) { return this.step("mt_session_eval_step", n); }

  call(name, ...args) {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core[name](this.session, ...args), name);
      return null;
    });
  }

  zero_grad() { return this.call("mt_session_zero_grad"); }
  optimizer_step() { return this.call("mt_session_optimizer_step"); }
  infer(n) { return this.call("mt_session_infer", n); }
  set_learning_rate(rate) { return this.call("mt_session_set_learning_rate", rate); }
  set_epoch(epoch) { return this.call("mt_session_set_epoch", BigInt(epoch)); }

  // ------------------------------------------------------------ state (the weights: microtrain_wasm_weights.mjs)

  get_learning_rate() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_get_learning_rate(this.session, this.scratch), "mt_session_get_learning_rate");
      return this.view().getFloat32(this.scratch, true);
    });
  }

  base_learning_rate() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_get_base_learning_rate(this.session, this.scratch),
                 "mt_session_get_base_learning_rate");
      return this.view().getFloat32(this.scratch, true);
    });
  }

  set_reference() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_set_reference(this.session), "mt_session_set_reference");
    });
  }

  counters() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_counters(this.session, this.scratch, this.scratch + 8), "mt_session_counters");
      const v = this.view();
      return [Number(v.getBigInt64(this.scratch, true)), Number(v.getBigInt64(this.scratch + 8, true))];
    });
  }

  numeric_errors() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_numeric_errors(this.session, this.scratch), "mt_session_numeric_errors");
      return Number(this.view().getBigInt64(this.scratch, true));
    });
  }
}

Object.assign(WasmBackend.prototype, checkpointMethods, weightMethods);

// The compiled module, and the object to register under "_microtrain_js".
export async function loadCore(wasmPath) {
  const wasmModule = await WebAssembly.compile(await readFile(wasmPath));
  return {
    wasmModule,
    module(mp) {
      return { create: () => new WasmBackend(wasmModule, (value) => mp.PyProxy.toJs(value)) };
    },
  };
}
