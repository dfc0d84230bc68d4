/*
 * insn_count: a QEMU TCG plugin that counts the guest instructions a program executes.
 *
 *   qemu-system-arm ... -plugin insn_count.so,out=count.txt -kernel fw.elf
 *   qemu-aarch64 -L /usr/aarch64-linux-gnu -plugin insn_count.so,out=count.txt ./prog
 *
 * At exit it writes "insns <N>" to the file named by out= (stderr without it). Each
 * translated instruction gets an inline 64-bit add, so the count is exact and the same on
 * every run: a deterministic cost measure (QEMU models no cycles).
 *
 * With mark=<hex address> it also writes "marks <c1> <c2> ..." : the count each time the
 * instruction at that address runs. A program that waits for input (MicroPython's REPL
 * polling its UART) executes a count that depends on the host's timing; calling a function
 * at that address around the code measured (benchmarks/micropython_cost.py calls
 * machine.idle()) gives differences that are exact again.
 *
 * Regions (per-op costs): with marks=ADDR,regions=N,mark_lo=LO,mark_hi=HI (hexadecimal) the
 * stores that instructions in [LO, HI) (the program's mark function) make to ADDR + 4·r,
 * r < N, switch the current region to r; every instruction counts for the region current when
 * it runs (region 0 before the first mark). At exit one line "region <r> <count>" follows for
 * each region that ran instructions. boards/app/bench.c's profile build and
 * benchmarks/arm_ops.py use this.
 *
 * Histogram (where the instructions go): with hist=PATH it also writes to PATH one line
 * "<address in hex> <count>" per instruction address that ran, its executions (an address
 * translated twice has two lines; benchmarks/insn_profile.py sums them and maps the addresses
 * to functions). Each translated instruction gets a second inline add, into its own counter.
 *
 * Histogram per region (where each op's instructions go): with regions and rhist=PATH it
 * writes to PATH, each time the region changes and at exit, a line "region <r>" (the region
 * that just ended) and then "<address in hex> <count>" for each instruction address that ran
 * in that stretch, its executions there (the counters' differences since the last change;
 * an address translated twice has two lines, stretches of one region several blocks).
 * benchmarks/arm_int8_ops.py sums them per region and address.
 *
 * Debian's QEMU 7.2 accepts plugins (API version 1) but ships no qemu-plugin.h, so the few
 * declarations used are written out below from the documented API; QEMU resolves them when
 * it loads this library. Build: cc -shared -fPIC -O2 -o insn_count.so insn_count.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* never looked into */
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t index);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
                                                enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef uint32_t qemu_plugin_meminfo_t;
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W = 2 };
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);

#define EXPORT __attribute__((visibility("default")))

EXPORT extern int qemu_plugin_version;
EXPORT int qemu_plugin_version = 1;

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv);

static uint64_t executed; /* one vCPU on the machines measured: no races */
static char out_path[4096];
static int have_mark;
static uint64_t mark_address;
static uint64_t marks[64];
static size_t num_marks;

static uint64_t parse_hex(const char *text)
{
    uint64_t value = 0;
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
        text += 2;
    for (; *text; text++) {
        int digit = *text >= '0' && *text <= '9'   ? *text - '0'
                    : *text >= 'a' && *text <= 'f' ? *text - 'a' + 10
                    : *text >= 'A' && *text <= 'F' ? *text - 'A' + 10 : -1;
        if (digit < 0)
            break;
        value = value * 16 + (uint64_t)digit;
    }
    return value;
}

static void on_mark(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index;
    (void)userdata;
    if (num_marks < sizeof marks / sizeof marks[0])
        marks[num_marks++] = executed;
}

#define MAX_REGIONS 4096
static uint64_t regions_base, region_fn_lo, region_fn_hi;
static uint64_t regions; /* 0: no regions */
static uint64_t region_insns[MAX_REGIONS];
static uint64_t current_region, region_start;

static void write_region_stretch(void);

static void on_region_mark(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    (void)vcpu, (void)info, (void)userdata;
    if (vaddr < regions_base || vaddr >= regions_base + 4 * regions)
        return;
    write_region_stretch();
    region_insns[current_region] += executed - region_start;
    region_start = executed;
    current_region = (vaddr - regions_base) / 4;
}

/* hist=: one counter per translated instruction, in blocks that never move (QEMU keeps the
 * counters' addresses) */
#define HIST_BLOCK 4096
typedef struct hist_block {
    struct hist_block *next;
    size_t used;
    uint64_t address[HIST_BLOCK], count[HIST_BLOCK];
    uint64_t written[HIST_BLOCK]; /* rhist=: count when the last region ended */
} hist_block;
static char hist_path[4096], rhist_path[4096];
static hist_block *hist_blocks;
static FILE *rhist;

static uint64_t *hist_counter(uint64_t address)
{
    if (hist_blocks == NULL || hist_blocks->used == HIST_BLOCK) {
        hist_block *b = calloc(1, sizeof *b);
        if (b == NULL)
            return NULL;
        b->next = hist_blocks;
        hist_blocks = b;
    }
    hist_blocks->address[hist_blocks->used] = address;
    return &hist_blocks->count[hist_blocks->used++];
}

/* rhist=: the executions of each address since the last region change, as the current
 * region's (the counters already hold the store that ends it, as region_insns does) */
static void write_region_stretch(void)
{
    if (rhist == NULL)
        return;
    fprintf(rhist, "region %llu\n", (unsigned long long)current_region);
    for (hist_block *b = hist_blocks; b; b = b->next)
        for (size_t i = 0; i < b->used; i++)
            if (b->count[i] != b->written[i]) {
                fprintf(rhist, "%llx %llu\n", (unsigned long long)b->address[i],
                        (unsigned long long)(b->count[i] - b->written[i]));
                b->written[i] = b->count[i];
            }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &executed, 1);
        if (hist_path[0] || rhist) {
            uint64_t *counter = hist_counter(qemu_plugin_insn_vaddr(insn));
            if (counter)
                qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, counter, 1);
        }
        if (have_mark && qemu_plugin_insn_vaddr(insn) == mark_address)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
        if (regions) {
            const uint64_t at = qemu_plugin_insn_vaddr(insn);
            if (at >= region_fn_lo && at < region_fn_hi)
                qemu_plugin_register_vcpu_mem_cb(insn, on_region_mark, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W,
                                                 NULL);
        }
    }
}

static void on_plugin_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    FILE *out = out_path[0] ? fopen(out_path, "w") : stderr;
    if (out == NULL)
        out = stderr;
    fprintf(out, "insns %llu\n", (unsigned long long)executed);
    if (have_mark) {
        fprintf(out, "marks");
        for (size_t i = 0; i < num_marks; i++)
            fprintf(out, " %llu", (unsigned long long)marks[i]);
        fprintf(out, "\n");
    }
    if (regions) {
        write_region_stretch();
        if (rhist)
            fclose(rhist);
        region_insns[current_region] += executed - region_start;
        for (uint64_t r = 0; r < regions; r++)
            if (region_insns[r])
                fprintf(out, "region %llu %llu\n", (unsigned long long)r, (unsigned long long)region_insns[r]);
    }
    if (out != stderr)
        fclose(out);
    if (hist_path[0]) {
        FILE *hist = fopen(hist_path, "w");
        if (hist == NULL) {
            fprintf(stderr, "insn_count: cannot write %s\n", hist_path);
            return;
        }
        for (const hist_block *b = hist_blocks; b; b = b->next)
            for (size_t i = 0; i < b->used; i++)
                if (b->count[i])
                    fprintf(hist, "%llx %llu\n", (unsigned long long)b->address[i],
                            (unsigned long long)b->count[i]);
        fclose(hist);
    }
}

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof out_path) {
            strcpy(out_path, argv[i] + 4);
        } else if (strncmp(argv[i], "hist=", 5) == 0 && strlen(argv[i] + 5) < sizeof hist_path) {
            strcpy(hist_path, argv[i] + 5);
        } else if (strncmp(argv[i], "rhist=", 6) == 0 && strlen(argv[i] + 6) < sizeof rhist_path) {
            strcpy(rhist_path, argv[i] + 6);
        } else if (strncmp(argv[i], "mark=", 5) == 0) {
            mark_address = parse_hex(argv[i] + 5) & ~1ull; /* the Thumb bit off */
            have_mark = 1;
        } else if (strncmp(argv[i], "marks=", 6) == 0) {
            regions_base = parse_hex(argv[i] + 6);
        } else if (strncmp(argv[i], "regions=", 8) == 0) {
            regions = parse_hex(argv[i] + 8);
            if (regions > MAX_REGIONS)
                regions = MAX_REGIONS;
        } else if (strncmp(argv[i], "mark_lo=", 8) == 0) {
            region_fn_lo = parse_hex(argv[i] + 8);
        } else if (strncmp(argv[i], "mark_hi=", 8) == 0) {
            region_fn_hi = parse_hex(argv[i] + 8);
        } else {
            fprintf(stderr, "insn_count: unknown argument %s (expected out=PATH, hist=PATH, rhist=PATH, "
                    "mark=ADDR, marks=, regions=, mark_lo=, mark_hi=)\n", argv[i]);
            return -1;
        }
    }
    if (rhist_path[0]) {
        if (regions == 0) {
            fprintf(stderr, "insn_count: rhist= needs the regions (marks=, regions=, mark_lo=, mark_hi=)\n");
            return -1;
        }
        rhist = fopen(rhist_path, "w");
        if (rhist == NULL) {
            fprintf(stderr, "insn_count: cannot write %s\n", rhist_path);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
