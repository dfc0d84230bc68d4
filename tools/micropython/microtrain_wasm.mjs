// microtrain's backend interface (py_facade/microtrain/backend/__init__.py) on the core compiled to
// wasm32 (CMake preset wasm32-wasi), for MicroPython running in JavaScript.
//
//   const core = await loadCore("build/presets/wasm32-wasi/micro_core/microtrain.wasm");
//   mp.registerJsModule("_microtrain_js", core.module(mp));
//   # MicroPython: microtrain.backend.js_backend wraps _microtrain_js.create() (backend.load() does)
//
// Every backend object gets its own instance of the module (its own linear memory), laid
// out like a firmware's RAM: the core never allocates, so this file places everything from
// __heap_base up and grows memory to fit:
//
//   __heap_base | scratch: out-params, config, trainable mask | image (16-aligned) | arena (16-aligned)
//
// JavaScript exceptions do not become Python exceptions, so no method throws for a failing
// core call: each sets `status` (an mt_status, 0 when fine), `message` and `function`, and
// microtrain.backend.js_backend raises MicrotrainError from them.

import { readFile } from "node:fs/promises";

const MT_ABI_VERSION = 6;
const ARENA_ALIGN = 16;
const SCRATCH_BYTES = 1024;         // out-params and mt_train_config
const MASK_OFFSET = 512;            // trainable_op_mask bytes (MT_MAX_OPS = 256) in scratch
const PAGE = 65536;
const KIND_INPUT = 0;
const KIND_TARGET = 1;

// wasm32 layouts of the public structs (checked against mt_struct_size at load).
const STRUCT_SIZES = { 0: 60, 1: 60, 2: 44, 3: 32, 4: 24 };
const CONFIG_OFFSETS = {
  optimizer: [0, "i32"], loss: [4, "i32"], reduction: [8, "i32"], batch_size: [12, "i32"],
  num_trainable_ops: [16, "i32"], biases_only: [20, "i32"], learning_rate: [24, "f32"],
  beta1: [28, "f32"], beta2: [32, "f32"], epsilon: [36, "f32"], momentum: [40, "f32"],
  weight_decay: [44, "f32"], accumulate_gradients: [52, "i32"], guard_gradients: [56, "i32"],
};
const CONFIG_MASK_OFFSET = 48;
const PLAN_FIELDS = [
  "total_bytes", "metadata_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes",
  "activation_bytes", "activation_grad_bytes", "io_bytes", "scratch_bytes", "reuse_bytes",
  "lower_bound_bytes", "num_trained_params", "first_trained_op", "fused_update", "reserved",
];

const alignUp = (value, alignment) => Math.ceil(value / alignment) * alignment;

class CoreError extends Error {
  constructor(status, message, fn) {
    super(message);
    this.status = status;
    this.fn = fn;
  }
}

class WasmBackend {
  constructor(wasmModule, toJs) {
    this.instance = new WebAssembly.Instance(wasmModule, {});
    this.core = this.instance.exports;
    this.toJs = toJs;
    this.scratch = alignUp(this.core.__heap_base.value, ARENA_ALIGN);
    this.image = 0;
    this.imageBytes = 0;
    this.session = 0;
    this.status = 0;
    this.message = "";
    this.function = "";
    if (this.core.mt_abi_version() !== MT_ABI_VERSION) {
      throw new Error(`microtrain.wasm has ABI ${this.core.mt_abi_version()}, this file ${MT_ABI_VERSION}`);
    }
    for (const [which, size] of Object.entries(STRUCT_SIZES)) {
      if (this.core.mt_struct_size(Number(which)) !== size) {
        throw new Error(`struct ${which}: ${this.core.mt_struct_size(Number(which))} bytes in microtrain.wasm, ${size} here`);
      }
    }
  }

  // ------------------------------------------------------------ memory

  view() { return new DataView(this.core.memory.buffer); }

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

  // A Python bytes object (a proxy: iterate it) or a JS Uint8Array, at a 16-aligned address.
  placeImage(image) {
    const bytes = image instanceof Uint8Array ? image : Uint8Array.from(image);
    this.image = alignUp(this.scratch + SCRATCH_BYTES, ARENA_ALIGN);
    this.imageBytes = bytes.length;
    this.reserve(this.image + bytes.length);
    new Uint8Array(this.core.memory.buffer, this.image, bytes.length).set(bytes);
  }

  writeConfig(config) {
    const cfg = this.toJs(config);
    const pointer = this.scratch + 256;
    this.core.mt_train_config_init(pointer);
    const view = this.view();
    for (const [name, [offset, type]] of Object.entries(CONFIG_OFFSETS)) {
      if (cfg[name] === undefined || cfg[name] === null) continue;
      if (type === "i32") view.setInt32(pointer + offset, Number(cfg[name]), true);
      else view.setFloat32(pointer + offset, Number(cfg[name]), true);
    }
    const mask = cfg.trainable_op_mask;
    if (mask !== undefined && mask !== null) {
      const bytes = new Uint8Array(this.core.memory.buffer, this.scratch + MASK_OFFSET, 256);
      bytes.fill(0);
      mask.forEach((bit, op) => { bytes[op] = bit ? 1 : 0; });
      view.setInt32(pointer + CONFIG_MASK_OFFSET, this.scratch + MASK_OFFSET, true);
    }
    return pointer;
  }

  // Run `body`, turning failures into status/message/function; returns its value or null.
  guard(body) {
    this.status = 0;
    this.message = "";
    this.function = "";
    try {
      return body();
    } catch (error) {
      this.status = error instanceof CoreError ? error.status : -1;
      this.message = error.message;
      this.function = error instanceof CoreError ? error.fn : "microtrain_wasm.mjs";
      return null;
    }
  }

  requireSession() {
    if (!this.session) throw new CoreError(-4, "the backend has no session: call open() first", "open");
  }

  // ------------------------------------------------------------ the backend interface

  describe(image) {
    return this.guard(() => {
      this.placeImage(image);
      const info = this.scratch;          // mt_model_info (32 bytes)
      const tensor = this.scratch + 64;   // mt_tensor_info (40 bytes)
      const index = this.scratch + 128;
      this.check(this.core.mt_model_check(this.image, this.imageBytes, info), "mt_model_check");
      const view = this.view();
      const numTensors = view.getInt32(info + 4, true);
      const readTensor = (i) => {
        this.check(this.core.mt_model_tensor(this.image, this.imageBytes, i, tensor), "mt_model_tensor");
        const v = this.view();
        const ndim = v.getInt32(tensor + 12, true);
        const dims = [];
        for (let d = 0; d < ndim; d++) dims.push(v.getInt32(tensor + 16 + 4 * d, true));
        return { dims, dtype: v.getInt32(tensor + 4, true), flags: v.getInt32(tensor + 8, true) };
      };
      const io = (isOutput, count) => {
        const shapes = [];
        for (let p = 0; p < count; p++) {
          this.check(this.core.mt_model_io(this.image, this.imageBytes, isOutput, p, index), "mt_model_io");
          shapes.push(readTensor(this.view().getInt32(index, true)).dims);
        }
        return shapes;
      };
      const params = [];
      for (let i = 0; i < numTensors; i++) {
        const t = readTensor(i);
        if ((t.flags & 1) && t.dtype === 1) params.push(t.dims);   // CONST, F32
      }
      return { num_ops: view.getInt32(info + 8, true), inputs: io(0, view.getInt32(info + 12, true)),
               outputs: io(1, view.getInt32(info + 16, true)), params };
    });
  }

  plan(image, config) {
    return this.guard(() => {
      this.placeImage(image);
      const plan = this.scratch;          // mt_memory_plan (60 bytes)
      this.check(this.core.mt_plan(this.image, this.imageBytes, this.writeConfig(config), plan), "mt_plan");
      const view = this.view();
      const result = {};
      PLAN_FIELDS.forEach((name, i) => { result[name] = view.getInt32(plan + 4 * i, true); });
      return result;
    });
  }

  open(image, config) {
    return this.guard(() => {
      this.session = 0;
      this.placeImage(image);
      const cfgPointer = this.writeConfig(config);
      const planPointer = this.scratch;
      this.check(this.core.mt_plan(this.image, this.imageBytes, cfgPointer, planPointer), "mt_plan");
      const totalBytes = this.view().getUint32(planPointer, true);
      const arena = alignUp(this.image + this.imageBytes, ARENA_ALIGN);
      this.reserve(arena + totalBytes);
      new Uint8Array(this.core.memory.buffer, arena, totalBytes).fill(0);
      const sessionOut = this.scratch + 128;
      this.check(this.core.mt_session_init(sessionOut, this.image, this.imageBytes, cfgPointer,
                                           arena, totalBytes), "mt_session_init");
      this.session = this.view().getUint32(sessionOut, true);
      this.batchSize = this.view().getInt32(cfgPointer + 12, true);
      const buffers = (getter) => {
        const list = [];
        for (let p = 0; getter(this.session, p, this.scratch, this.scratch + 4) === 0; p++) {
          const v = this.view();
          list.push({ pointer: v.getUint32(this.scratch, true), count: v.getInt32(this.scratch + 4, true) });
        }
        return list;
      };
      this.inputs = buffers(this.core.mt_session_input);
      this.outputs = buffers(this.core.mt_session_output);
      this.check(this.core.mt_session_target(this.session, this.scratch, this.scratch + 4), "mt_session_target");
      const v = this.view();
      this.target = { pointer: v.getUint32(this.scratch, true), count: v.getInt32(this.scratch + 4, true) / 4 };
      this.sparse = this.toJs(config).loss === 3;
      return null;
    });
  }

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

  step(name, n) {
    return this.guard(() => {
      this.requireSession();
      const loss = this.scratch + 8;
      this.check(this.core[name](this.session, n, loss), name);
      return this.view().getFloat32(loss, true);
    });
  }

  train_step(n) { return this.step("mt_session_train_step", n); }
  eval_step(n) { return this.step("mt_session_eval_step", n); }

  infer(n) {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_infer(this.session, n), "mt_session_infer");
      return null;
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

  // Each weight tensor in mt_session_param order: where it lies and how many floats.
  params() {
    this.requireSession();
    const count = this.scratch;
    this.check(this.core.mt_session_param_count(this.session, count), "mt_session_param_count");
    const list = [];
    const info = this.scratch + 64;      // mt_param_info (24 bytes)
    for (let p = 0; p < this.view().getInt32(count, true); p++) {
      this.check(this.core.mt_session_param(this.session, p, info), "mt_session_param");
      const v = this.view();
      const trained = v.getInt32(info + 8, true);
      list.push({ pointer: v.getUint32(info + (trained ? 16 : 20), true), bytes: 4 * v.getInt32(info + 4, true) });
    }
    return list;
  }

  weights() {
    return this.guard(() => {
      const params = this.params();
      const out = new Uint8Array(params.reduce((sum, p) => sum + p.bytes, 0));
      let offset = 0;
      for (const p of params) {
        out.set(new Uint8Array(this.core.memory.buffer, p.pointer, p.bytes), offset);
        offset += p.bytes;
      }
      return out;
    });
  }

  // zlib.crc32 of weights(), by the core's own mt_crc32_update. Returned as a signed int32
  // (MicroPython's proxy passes JS integers as int32); _js_backend masks it.
  weights_crc32() {
    return this.guard(() => {
      let crc = 0;
      for (const p of this.params()) crc = this.core.mt_crc32_update(crc, p.pointer, p.bytes);
      return crc | 0;
    });
  }

  set_learning_rate(rate) {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_set_learning_rate(this.session, rate), "mt_session_set_learning_rate");
      return null;
    });
  }

  get_learning_rate() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_get_learning_rate(this.session, this.scratch), "mt_session_get_learning_rate");
      return this.view().getFloat32(this.scratch, true);
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

  set_epoch(epoch) {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_set_epoch(this.session, BigInt(epoch)), "mt_session_set_epoch");
      return null;
    });
  }

  optimizer_step() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_optimizer_step(this.session), "mt_session_optimizer_step");
      return null;
    });
  }

  numeric_errors() {
    return this.guard(() => {
      this.requireSession();
      this.check(this.core.mt_session_numeric_errors(this.session, this.scratch), "mt_session_numeric_errors");
      return Number(this.view().getBigInt64(this.scratch, true));
    });
  }

  close() {
    this.session = 0;
    this.inputs = this.outputs = this.target = null;
    return null;
  }
}

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
