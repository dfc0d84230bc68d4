/*
 * _microtrain's numbers in and out (modmicrotrain.c describes the module): 32-bit integers
 * from Python ints, array('f') / array('b') / array('i') results, and the rows and weights a
 * caller gives as a buffer (array('f'), array('i'), bytearray, memoryview, ...) or an iterable
 * of numbers, copied into the core's float32 / int32 buffers.
 */
#include "py/binary.h"

#include "backend.h"

/* The repr of `value`, for a message (allocates: error paths only). */
const char *mtmod_repr(mp_obj_t value) {
    vstr_t text;
    mp_print_t print;
    vstr_init_print(&text, 16, &print);
    mp_obj_print_helper(&print, value, PRINT_REPR);
    return vstr_null_terminated_str(&text);
}

/* Whether the integer `value` lies in low..high (into *out when it does). Python's ints are
 * compared as ints, never cut to a machine word first: 2**40 is not 0 and 2**64 + 3 is not 3
 * (mp_obj_get_int raises OverflowError past a word, mp_obj_get_ll keeps the low 64 bits).
 * A value that is not an integer (or a bool) raises MicrotrainError naming `what`. Small ints
 * allocate nothing: the steps call this for n. */
bool mtmod_int_in(mp_obj_t value, long long low, long long high, long long *out,
    const char *what, const char *function) {
    long long v;
    if (mp_obj_is_small_int(value)) {
        v = MP_OBJ_SMALL_INT_VALUE(value);
    } else if (mp_obj_is_bool(value)) {
        v = value == mp_const_true;
    } else if (mp_obj_is_int(value)) {
        if (mp_obj_is_true(mp_binary_op(MP_BINARY_OP_LESS, value, mp_obj_new_int_from_ll(low)))
            || mp_obj_is_true(mp_binary_op(MP_BINARY_OP_MORE, value,
                mp_obj_new_int_from_ll(high)))) {
            return false;
        }
        v = mp_obj_get_ll(value); /* within low..high: every bit kept */
    } else {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function, "%s must be an integer, not %s", what,
            mp_obj_get_type_str(value));
    }
    if (v < low || v > high) {
        return false;
    }
    *out = v;
    return true;
}

int32_t mtmod_get_i32(mp_obj_t value, const char *what, const char *function) {
    long long v;
    if (!mtmod_int_in(value, INT32_MIN, INT32_MAX, &v, what, function)) {
        mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function, "%s %s does not fit in 32 bits", what,
            mtmod_repr(value));
    }
    return (int32_t)v;
}

/* A new array of `typecode` ('f', 'b' or 'i') of n zeros (the interface's "flat sequence"). */
mp_obj_array_t *mtmod_new_array(char typecode, size_t n) {
    mp_obj_array_t *array = mp_obj_malloc(mp_obj_array_t, &mp_type_array);
    array->typecode = typecode;
    array->free = 0;
    array->len = n;
    array->items = m_new0(uint8_t, mp_binary_get_size('@', typecode, NULL) * (n == 0 ? 1 : n));
    return array;
}

/* Element `i` of a buffer of typecode `code`, as an integer or a double (*is_float). */
static void buffer_item(char code, size_t size, const uint8_t *p, long long *integer,
    double *real, bool *is_float) {
    *is_float = false;
    switch (code) {
        case 'f': {
            float f;
            memcpy(&f, p, 4);
            *real = (double)f;
            *is_float = true;
            return;
        }
        case 'd': {
            double d;
            memcpy(&d, p, 8);
            *real = d;
            *is_float = true;
            return;
        }
        case 'b': case 'h': case 'i': case 'l': case 'q': {
            int64_t v = 0;
            if (size == 1) { int8_t x; memcpy(&x, p, 1); v = x; }
            else if (size == 2) { int16_t x; memcpy(&x, p, 2); v = x; }
            else if (size == 4) { int32_t x; memcpy(&x, p, 4); v = x; }
            else { memcpy(&v, p, 8); }
            *integer = v;
            return;
        }
        default: { /* B H I L Q, bytearray */
            uint64_t v = 0;
            if (size == 1) { v = *p; }
            else if (size == 2) { uint16_t x; memcpy(&x, p, 2); v = x; }
            else if (size == 4) { uint32_t x; memcpy(&x, p, 4); v = x; }
            else { memcpy(&v, p, 8); }
            *integer = v > (uint64_t)INT64_MAX ? INT64_MAX : (long long)v;
            return;
        }
    }
}

/* The integers of labels: any int32. */
const mtmod_integers mtmod_labels = {INT32_MIN, INT32_MAX, "labels", "an int32 label"};

/* Store value number i of a flat sequence into dst: float32, or (`integers` not NULL) int32
 * in integers' range. */
static void store_item(void *dst, size_t i, const mtmod_integers *integers, long long integer,
    double real, bool is_float, const char *function) {
    if (integers != NULL) {
        if (is_float) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function,
                "value %lu is a float; %s are integers", (unsigned long)i, integers->values);
        }
        if (integer < integers->low || integer > integers->high) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function,
                "value %lu (%s) does not fit in %s", (unsigned long)i,
                mtmod_repr(mp_obj_new_int_from_ll(integer)), integers->one);
        }
        ((int32_t *)dst)[i] = (int32_t)integer;
    } else {
        ((float *)dst)[i] = is_float ? (float)real : (float)integer;
    }
}

/* The number of values in `values` (a buffer or an iterable of numbers), copied into dst as
 * float32 (`integers` NULL) or as int32 in integers' range (a value outside it, or a float,
 * raises naming integers' words); more than `capacity` raises before anything is written
 * past it. An
 * iterable runs Python code between its values (a generator, a __float__), which could move
 * the arena dst lies in: before each value is stored, and after the last, the session's lent
 * buffers are checked (`self`, or NULL when dst is the caller's own). */
size_t mtmod_copy_values(backend_obj_t *self, mp_obj_t values, void *dst, size_t capacity,
    const mtmod_integers *integers, const char *function) {
    mp_buffer_info_t buffer;
    if (mp_get_buffer(values, &buffer, MP_BUFFER_READ)) {
        char code = (char)buffer.typecode;
        if (code == BYTEARRAY_TYPECODE) {
            code = 'B';
        }
        size_t size = mp_binary_get_size('@', code, NULL);
        size_t count = buffer.len / size;
        if (count > capacity) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function,
                "%lu values do not fit in %lu", (unsigned long)count, (unsigned long)capacity);
        }
        const bool any_int32 = integers != NULL && integers->low == INT32_MIN
            && integers->high == INT32_MAX;
        if (code == (integers != NULL ? 'i' : 'f') && size == 4
            && (integers == NULL || any_int32)) {
            memcpy(dst, buffer.buf, 4 * count); /* the common case: array('f'), array('i') */
            return count;
        }
        for (size_t i = 0; i < count; ++i) {
            long long integer = 0;
            double real = 0.0;
            bool is_float;
            buffer_item(code, size, (const uint8_t *)buffer.buf + i * size, &integer, &real,
                &is_float);
            store_item(dst, i, integers, integer, real, is_float, function);
        }
        return count;
    }
    mp_obj_iter_buf_t iter_buf;
    mp_obj_t iterator = mp_getiter(values, &iter_buf);
    size_t count = 0;
    for (mp_obj_t item; (item = mp_iternext(iterator)) != MP_OBJ_STOP_ITERATION; ++count) {
        if (count == capacity) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function,
                "more than %lu values", (unsigned long)capacity);
        }
        bool is_float = mp_obj_is_float(item);
        long long integer = 0;
        if (integers != NULL && !is_float && !mtmod_int_in(item, integers->low, integers->high,
                &integer, integers->one, function)) {
            mtmod_raise_error(MT_ERR_BAD_ARGUMENT, function, "value %lu (%s) does not fit in %s",
                (unsigned long)count, mtmod_repr(item), integers->one);
        }
        /* a float row takes any real number, a big int too (as the nearest float) */
        const double real = integers != NULL ? 0.0 : (double)mp_obj_get_float(item);
        if (self != NULL) {
            mtmod_check_lent(self, function); /* the Python code above may have moved it */
        }
        store_item(dst, count, integers, integer, real, is_float || integers == NULL, function);
    }
    if (self != NULL) {
        mtmod_check_lent(self, function); /* the generator's end ran Python code too */
    }
    return count;
}
