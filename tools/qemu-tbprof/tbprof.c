/*
 * tbprof: a QEMU TCG plugin that counts the guest instructions each
 * translation block executes, for an instruction profile of the schedlab
 * kernel under `--icount` (docs/kernel.md, "Profiling the kernel").
 *
 * At exit it writes one line per executed guest instruction of each
 * translated block: its virtual address, 1, and how many times the block
 * ran (`vaddr insns runs`, so a line may also stand for a whole block), to
 * the file named by the `out=PATH` argument (default tbprof.txt).
 * `tbprof.py` attributes them to the kernel's functions and lines.
 *
 * Only the part of QEMU's plugin API this needs is declared here (the API
 * has kept these calls since its first version); the plugin says it was
 * built for API version 4, which QEMU 8.2-10.x accept.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, qemu_plugin_vcpu_udata_cb_t,
                                          enum qemu_plugin_cb_flags, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 4;

struct block {
    uint64_t runs;
    struct block *next;
    size_t insns;
    uint64_t vaddr[]; /* of each instruction */
};

static struct block *blocks;
static const char *out_path = "tbprof.txt";

/* Under --icount QEMU runs every vCPU on one thread, so plain adds are exact. */
static void on_exec(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    ((struct block *)udata)->runs++;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct block *b = calloc(1, sizeof *b + n * sizeof b->vaddr[0]);
    if (!b) {
        return;
    }
    b->insns = n;
    for (size_t i = 0; i < n; i++) {
        b->vaddr[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
    }
    b->next = blocks;
    blocks = b;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
    (void)id;
    (void)udata;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        perror(out_path);
        return;
    }
    for (struct block *b = blocks; b; b = b->next) {
        for (size_t i = 0; b->runs && i < b->insns; i++) {
            fprintf(f, "%" PRIx64 " 1 %" PRIu64 "\n", b->vaddr[i], b->runs);
        }
    }
    fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                              const qemu_info_t *info,
                                                              int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out_path = argv[i] + 4;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
