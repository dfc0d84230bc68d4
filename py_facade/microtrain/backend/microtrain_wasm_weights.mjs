// The weights of microtrain_wasm.mjs's backend (methods its class takes on): the facade's
// numbering of the float weights (mt_session_param) and the int8 layers' weights and biases
// trained in place (mt_session_qparam), their values read and written in place in the core's
// memory (a float layer's first rows in the arena, the rest in the image, mt_param_info.held),
// all of them as bytes and their CRC.

import { MT } from "./microtrain_wasm_abi.mjs";

// A weight's type by its mt_param_info.dtype: array typecode, typed array, integer range.
export const WEIGHT_TYPES = {
  [MT.MT_DTYPE_F32]: { name: "float32", typecode: "f", array: Float32Array },
  [MT.MT_DTYPE_I8]: { name: "int8", typecode: "b", array: Int8Array, low: -128, high: 127 },
  [MT.MT_DTYPE_I32]: { name: "int32", typecode: "i", array: Int32Array, low: -2147483648, high: 2147483647 },
};

export const weightMethods = {
  // The weights as the facade numbers them (describe()'s "params", Session.get_weights()): the
  // CONST f32 tensors of mt_session_param and the int8 weights / int32 biases of int8 layers
  // trained in place of mt_session_qparam, merged in tensor-table order (a tensor is in one
  // list at most, so sorting by tensor index merges them). The one place that maps a weight's
  // position to (list, position in it): each entry says where its values lie, how many, of
  // which type (WEIGHT_TYPES), trained?, and its position in mt_session_qparam (-1: f32).
  params() {
    this.requireSession();
    const info = this.scratch + 64;      // mt_param_info
    const list = [];
    for (const name of ["mt_session_param", "mt_session_qparam"]) {
      this.check(this.core[name + "_count"](this.session, this.scratch), name + "_count");
      const count = this.view().getInt32(this.scratch, true);
      for (let p = 0; p < count; p++) {
        this.check(this.core[name](this.session, p, info), name);
        const trained = this.get(info, "mt_param_info", "trained");
        list.push({ tensor: this.get(info, "mt_param_info", "tensor_index"),
                    data: this.get(info, "mt_param_info", "data"), held: this.get(info, "mt_param_info", "held"),
                    image: this.get(info, "mt_param_info", "image_data"),
                    count: this.get(info, "mt_param_info", "count"), trained: Boolean(trained),
                    type: WEIGHT_TYPES[this.get(info, "mt_param_info", "dtype")],
                    quantized: name === "mt_session_qparam" ? p : -1 });
      }
    }
    return list.sort((a, b) => a.tensor - b.tensor);
  },

  // Weight `position` of that order, or an error naming how many there are.
  param(position) {
    const params = this.params();
    if (!Number.isInteger(position) || position < 0 || position >= params.length) {
      throw new Error(`the model has ${params.length} weights, not ${position + 1}`);
    }
    return params[position];
  },

  // A weight's values in place: typed arrays of its type over the core's memory, back to back
  // the weight: the arena's first p.held values (mt_param_info.held: all of a weight trained
  // whole, the first rows of a float layer a sparse update trains the first channels of),
  // then the image's (the rest, read there in place).
  parts(p) {
    const width = p.type.array.BYTES_PER_ELEMENT, parts = [];
    if (p.held > 0) parts.push(new p.type.array(this.core.memory.buffer, p.data, p.held));
    if (p.held < p.count) {
      parts.push(new p.type.array(this.core.memory.buffer, p.image + width * p.held, p.count - p.held));
    }
    return parts;
  },

  trained() {
    return this.guard(() => this.params().map((p) => p.trained));
  },

  // [typecode, values]: js_backend makes the array('f' / 'b' / 'i') of the weight's type.
  read_param(position) {
    return this.guard(() => {
      const p = this.param(position);
      return [p.type.typecode, this.parts(p).flatMap((part) => Array.from(part))];
    });
  },

  // Every value is checked before any is written (a bad one leaves the weight as it was); an
  // int8 layer's trained weight then restarts its float master copy (mt_session_qparam_written).
  write_param(position, values) {
    return this.guard(() => {
      const p = this.param(position);
      const fresh = new p.type.array(p.count);
      let i = 0;
      for (const value of values) {
        if (i >= p.count) throw new Error(`weight ${position} has ${p.count} values`);
        if (p.type.low !== undefined && !(Number.isInteger(value) && value >= p.type.low && value <= p.type.high)) {
          throw new Error(`weight ${position} is ${p.type.name}: value ${i} (${value}) is not an integer ` +
                          `in ${p.type.low}..${p.type.high}`);
        }
        fresh[i++] = value;
      }
      if (i !== p.count) throw new Error(`weight ${position} has ${p.count} values, got ${i}`);
      let done = 0;
      for (const part of this.parts(p)) {
        part.set(fresh.subarray(done, done + part.length));
        done += part.length;
      }
      if (p.quantized >= 0 && p.trained) {
        this.check(this.core.mt_session_qparam_written(this.session, p.quantized), "mt_session_qparam_written");
      }
      return null;
    });
  },

  // Every weight in that order, little-endian at its width (wasm memory is little-endian).
  weights() {
    return this.guard(() => {
      const params = this.params();
      const width = (p) => p.count * p.type.array.BYTES_PER_ELEMENT;
      const out = new Uint8Array(params.reduce((sum, p) => sum + width(p), 0));
      let offset = 0;
      for (const p of params) {
        for (const part of this.parts(p)) {
          out.set(new Uint8Array(part.buffer, part.byteOffset, part.byteLength), offset);
          offset += part.byteLength;
        }
      }
      return out;
    });
  },

  // The core's mt_session_weights_crc32, the figure a firmware prints: zlib.crc32 of
  // weights().
  // Returned as a signed int32 (MicroPython's proxy passes JS integers as int32); js_backend
  // masks it.
  weights_crc32() {
    return this.guard(() => {
      this.check(this.core.mt_session_weights_crc32(this.session, this.scratch), "mt_session_weights_crc32");
      return new DataView(this.core.memory.buffer).getUint32(this.scratch, true) | 0;
    });
  },
};
