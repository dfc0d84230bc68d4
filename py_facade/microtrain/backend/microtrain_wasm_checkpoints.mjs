// Checkpoints and export of microtrain_wasm.mjs's backend (methods its class takes on): they
// cross as whole byte strings through the transfer area, since a JS host cannot hand the core
// a callback (saving: mt_checkpoint_save_buffer; loading: mt_wasm_checkpoint_load of
// micro_core/wasm/mt_wasm.c, which collects the properties as records; export:
// mt_session_export_image_buffer).

import { alignUp, ARENA_ALIGN } from "./microtrain_wasm.mjs";
import { MT, STRUCTS } from "./microtrain_wasm_abi.mjs";

const PROPERTY = STRUCTS.mt_property;

export const checkpointMethods = {
  // properties: [[name, kind, value], ...] with int values as decimal strings (64-bit safe).
  // Lays out the mt_property array and its strings from `start`; returns
  // [pointer, count, bytes used].
  placeProperties(properties, start) {
    const list = this.toJs(properties);
    const encoder = new TextEncoder();
    const structs = alignUp(start, 8);
    let strings = structs + PROPERTY.size * list.length;
    const need = strings + list.reduce((sum, [name, kind, value]) =>
      sum + encoder.encode(name).length + 1 + (kind === MT.MT_PROPERTY_STRING ? encoder.encode(value).length + 1 : 0), 0);
    this.reserve(need);
    const cString = (text) => {
      const bytes = encoder.encode(text);
      this.bytes(strings, bytes.length).set(bytes);
      this.bytes(strings + bytes.length, 1)[0] = 0;
      const pointer = strings;
      strings += bytes.length + 1;
      return pointer;
    };
    list.forEach(([name, kind, value], k) => {
      const entry = structs + PROPERTY.size * k;
      this.bytes(entry, PROPERTY.size).fill(0);
      this.set(entry, "mt_property", "name", cString(name));
      this.set(entry, "mt_property", "type", kind);
      if (kind === MT.MT_PROPERTY_INT) this.set(entry, "mt_property", "int_value", BigInt(value));
      else if (kind === MT.MT_PROPERTY_FLOAT) this.set(entry, "mt_property", "float_value", Number(value));
      else this.set(entry, "mt_property", "str_value", cString(value));
    });
    return [structs, list.length, need - start];
  },

  checkpoint_bytes(includeOptimizer, properties) {
    return this.guard(() => {
      this.requireSession();
      const [pointer, count] = this.placeProperties(properties, this.transfer(0));
      this.check(this.core.mt_checkpoint_bytes(this.session, includeOptimizer ? 1 : 0, pointer, count,
                                               this.scratch), "mt_checkpoint_bytes");
      return this.view().getUint32(this.scratch, true);
    });
  },

  checkpoint_save(includeOptimizer, properties) {
    return this.guard(() => {
      this.requireSession();
      const start = this.transfer(0);
      const [pointer, count, used] = this.placeProperties(properties, start);
      this.check(this.core.mt_checkpoint_bytes(this.session, includeOptimizer ? 1 : 0, pointer, count,
                                               this.scratch), "mt_checkpoint_bytes");
      const size = this.view().getUint32(this.scratch, true);
      const out = alignUp(start + used, ARENA_ALIGN);
      this.reserve(out + size);
      this.check(this.core.mt_checkpoint_save_buffer(this.session, includeOptimizer ? 1 : 0, pointer, count,
                                                     out, size, this.scratch), "mt_checkpoint_save");
      return this.bytes(out, this.view().getUint32(this.scratch, true)).slice();
    });
  },

  // Returns [[name, kind, value], ...] (int values as decimal strings).
  checkpoint_load(data) {
    return this.guard(() => {
      this.requireSession();
      const bytes = this.asBytes(data);
      const at = this.transfer(2 * bytes.length + 16);
      this.bytes(at, bytes.length).set(bytes);
      const props = alignUp(at + bytes.length, ARENA_ALIGN);
      this.check(this.core.mt_wasm_checkpoint_load(this.session, at, bytes.length, props, bytes.length,
                                                   this.scratch), "mt_checkpoint_load");
      const used = this.view().getUint32(this.scratch, true);
      const decoder = new TextDecoder();
      const result = [];
      for (let p = props; p < props + used;) {
        const v = this.view();
        const kind = v.getUint8(p), nameBytes = v.getUint8(p + 1), valueBytes = v.getUint16(p + 2, true);
        const name = decoder.decode(this.bytes(p + 4, nameBytes));
        const value = p + 4 + nameBytes;
        if (kind === MT.MT_PROPERTY_INT) result.push([name, kind, v.getBigInt64(value, true).toString()]);
        else if (kind === MT.MT_PROPERTY_FLOAT) result.push([name, kind, v.getFloat64(value, true)]);
        else result.push([name, kind, decoder.decode(this.bytes(value, valueBytes))]);
        p = value + valueBytes;
      }
      return result;
    });
  },

  export_image() {
    return this.guard(() => {
      this.requireSession();
      const out = this.transfer(this.imageBytes);
      this.check(this.core.mt_session_export_image_buffer(this.session, out, this.imageBytes, this.scratch),
                 "mt_session_export_image");
      return this.bytes(out, this.view().getUint32(this.scratch, true)).slice();
    });
  },
};
