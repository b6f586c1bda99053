/*
 * tbprof: a QEMU TCG plugin that counts the guest instructions each
 * translation block executes, for an instruction profile of the schedlab
 * kernel under `--icount` (docs/kernel.md, "Profiling the kernel").
 *
 * At exit it writes one line per translated block: its guest virtual
 * address, its instruction count and how many times it ran, to the file
 * named by the `out=PATH` argument (default tbprof.txt). `tbprof.py`
 * attributes blocks to the kernel's functions.
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
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, qemu_plugin_vcpu_udata_cb_t,
                                          enum qemu_plugin_cb_flags, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 4;

struct block {
    uint64_t vaddr;
    uint64_t insns;
    uint64_t runs;
    struct block *next;
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
    struct block *b = calloc(1, sizeof *b);
    if (!b) {
        return;
    }
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->insns = qemu_plugin_tb_n_insns(tb);
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
        if (b->runs) {
            fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", b->vaddr, b->insns, b->runs);
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
