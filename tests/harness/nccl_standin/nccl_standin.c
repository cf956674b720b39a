/*
 * Copyright: (c) 2026, dsxos.cluster contributors
 * Apache License 2.0 (see LICENSE)
 *
 * CPU stand-in for NVIDIA nccl-tests, for test fabrics without GPUs.
 *
 * One binary, several names: the collective is chosen by the program name (argv[0]):
 * all_reduce_perf, all_gather_perf, alltoall_perf, reduce_scatter_perf, broadcast_perf,
 * sendrecv_perf (an "_mpi" suffix is accepted).  Each MPI process is one rank ("one GPU").
 * The collectives are REAL MPI collectives over float buffers (MPI_Allreduce, MPI_Allgather,
 * MPI_Alltoall, MPI_Reduce_scatter_block, MPI_Bcast, MPI_Sendrecv to the ring neighbours),
 * timed with MPI_Wtime over -n iterations after -w warm-up iterations, averaged over ranks,
 * optionally checked element by element (-c 1), and printed in the nccl-tests text format
 * (same header, columns, bus-bandwidth factors and summary lines).
 *
 * Test hooks (environment):
 *   NCCL_STANDIN_HANG=<rank>   that rank sleeps forever before the first collective;
 *   NCCL_STANDIN_CORRUPT=1     rank 0 flips its received data, so #wrong > 0;
 *   NCCL_STANDIN_DEVICE=<txt>  device name printed on the "#  Rank" lines (default CPU-standin).
 */
#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STANDIN_VERSION "2.17.6-cpu-standin"
#define HOST_LEN 64
#define DEVICE_LEN 64

enum coll { C_ALL_REDUCE, C_ALL_GATHER, C_ALLTOALL, C_REDUCE_SCATTER, C_BROADCAST, C_SENDRECV, C_NONE };

static const char *const coll_names[] = {
    "all_reduce", "all_gather", "alltoall", "reduce_scatter", "broadcast", "sendrecv",
};

struct opts {
    long min_bytes;
    long max_bytes;
    long step_bytes;
    long step_factor;
    int ngpus;
    int nthreads;
    int iters;
    int warmup;
    int agg_iters;
    int check;
    int blocking;
    int graph;
    int average;
    int root;
    const char *op;
    const char *dtype;
};

struct peer {
    int pid;
    char host[HOST_LEN];
};

static int g_rank;
static int g_nranks;

static void die(const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* A usage error: every rank sees the same arguments, so rank 0 alone reports it. */
static void die_usage(const char *msg)
{
    if (g_rank == 0) {
        fprintf(stderr, "%s\n", msg);
        fflush(stderr);
    }
    MPI_Finalize();
    exit(2);
}

static enum coll coll_from_name(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    for (int i = 0; i < C_NONE; i++) {
        size_t n = strlen(coll_names[i]);
        if (strncmp(base, coll_names[i], n) == 0 && strncmp(base + n, "_perf", 5) == 0) {
            const char *rest = base + n + 5;
            if (*rest == '\0' || strcmp(rest, "_mpi") == 0)
                return (enum coll)i;
        }
    }
    return C_NONE;
}

/* nccl-tests' size syntax: an integer with an optional K/M/G suffix (powers of 1024). */
static long parse_size(const char *text, const char *flag)
{
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || end == text || value < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "nccl-tests CPU stand-in: invalid size '%s' for %s", text, flag);
        die_usage(msg);
    }
    switch (toupper((unsigned char)*end)) {
    case 'G': value <<= 30; end++; break;
    case 'M': value <<= 20; end++; break;
    case 'K': value <<= 10; end++; break;
    default: break;
    }
    if (*end != '\0') {
        char msg[256];
        snprintf(msg, sizeof msg, "nccl-tests CPU stand-in: invalid size '%s' for %s", text, flag);
        die_usage(msg);
    }
    return (long)value;
}

static int parse_int(const char *text, const char *flag)
{
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || value < -1000000 || value > 1000000000) {
        char msg[256];
        snprintf(msg, sizeof msg, "nccl-tests CPU stand-in: invalid number '%s' for %s", text, flag);
        die_usage(msg);
    }
    return (int)value;
}

static void usage(const char *prog)
{
    if (g_rank == 0)
        fprintf(stderr,
                "USAGE: %s [-t nthreads(1)] [-g ngpus(1)] [-b minbytes] [-e maxbytes] [-i stepbytes | -f stepfactor]\n"
                "       [-n iters] [-m agg_iters] [-w warmup_iters] [-c check(0/1)] [-o op(sum)] [-d datatype(float)]\n"
                "       [-r root] [-z blocking(0/1)] [-G cudagraph_iters] [-a average(0-3)] [-p parallel_init] [-C report_cputime]\n"
                "CPU stand-in for nccl-tests: one MPI process per rank, only -t 1 -g 1 -d float -o sum.\n",
                prog);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"nthreads", required_argument, 0, 't'}, {"ngpus", required_argument, 0, 'g'},
        {"minbytes", required_argument, 0, 'b'}, {"maxbytes", required_argument, 0, 'e'},
        {"stepbytes", required_argument, 0, 'i'}, {"stepfactor", required_argument, 0, 'f'},
        {"iters", required_argument, 0, 'n'}, {"agg_iters", required_argument, 0, 'm'},
        {"warmup_iters", required_argument, 0, 'w'}, {"parallel_init", required_argument, 0, 'p'},
        {"check", required_argument, 0, 'c'}, {"op", required_argument, 0, 'o'},
        {"datatype", required_argument, 0, 'd'}, {"root", required_argument, 0, 'r'},
        {"blocking", required_argument, 0, 'z'}, {"stream_null", required_argument, 0, 'y'},
        {"timeout", required_argument, 0, 'T'}, {"cudagraph", required_argument, 0, 'G'},
        {"report_cputime", required_argument, 0, 'C'}, {"average", required_argument, 0, 'a'},
        {"local_register", required_argument, 0, 'R'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    o->min_bytes = 32 << 20;
    o->max_bytes = 32 << 20;
    o->step_bytes = 1 << 20;
    o->step_factor = 1;
    o->ngpus = 1;
    o->nthreads = 1;
    o->iters = 20;
    o->warmup = 1;
    o->agg_iters = 1;
    o->check = 1;
    o->blocking = 1;
    o->graph = 0;
    o->average = 1;
    o->root = 0;
    o->op = "sum";
    o->dtype = "float";
    opterr = 0;
    while ((c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:p:c:o:d:r:z:y:T:G:C:a:R:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't': o->nthreads = parse_int(optarg, "-t"); break;
        case 'g': o->ngpus = parse_int(optarg, "-g"); break;
        case 'b': o->min_bytes = parse_size(optarg, "-b"); break;
        case 'e': o->max_bytes = parse_size(optarg, "-e"); break;
        case 'i': o->step_bytes = parse_size(optarg, "-i"); o->step_factor = 1; break;
        case 'f': o->step_factor = parse_int(optarg, "-f"); break;
        case 'n': o->iters = parse_int(optarg, "-n"); break;
        case 'm': o->agg_iters = parse_int(optarg, "-m"); break;
        case 'w': o->warmup = parse_int(optarg, "-w"); break;
        case 'c': o->check = parse_int(optarg, "-c"); break;
        case 'o': o->op = optarg; break;
        case 'd': o->dtype = optarg; break;
        case 'r': o->root = parse_int(optarg, "-r"); break;
        case 'z': o->blocking = parse_int(optarg, "-z"); break;
        case 'G': o->graph = parse_int(optarg, "-G"); break;
        case 'a': o->average = parse_int(optarg, "-a"); break;
        case 'p': case 'y': case 'T': case 'C': case 'R':
            (void)parse_int(optarg, "option");
            break;
        case 'h':
            usage(argv[0]);
            MPI_Finalize();
            exit(0);
        default:
            usage(argv[0]);
            die_usage("nccl-tests CPU stand-in: invalid option");
        }
    }
    if (optind < argc)
        die_usage("nccl-tests CPU stand-in: unexpected positional argument");
    if (o->nthreads != 1)
        die_usage("nccl-tests CPU stand-in: only -t 1 is supported (launch one MPI process per rank)");
    if (o->ngpus != 1)
        die_usage("nccl-tests CPU stand-in: only -g 1 is supported (launch one MPI process per rank, e.g. mpirun -np N)");
    if (strcmp(o->dtype, "float") != 0)
        die_usage("nccl-tests CPU stand-in: only -d float is supported");
    if (strcmp(o->op, "sum") != 0)
        die_usage("nccl-tests CPU stand-in: only -o sum is supported");
    if (o->iters < 1 || o->warmup < 0 || o->agg_iters < 1)
        die_usage("nccl-tests CPU stand-in: -n and -m must be >= 1, -w >= 0");
    if (o->min_bytes < 4 || o->max_bytes < o->min_bytes)
        die_usage("nccl-tests CPU stand-in: need 4 <= minBytes <= maxBytes");
    if (o->max_bytes > (1L << 31))
        die_usage("nccl-tests CPU stand-in: maxBytes is limited to 2G");
    if (o->step_factor < 1 || (o->step_factor == 1 && o->step_bytes < 1))
        die_usage("nccl-tests CPU stand-in: -f must be >= 2 or -i >= 1");
    if (o->average < 0 || o->average > 3)
        die_usage("nccl-tests CPU stand-in: -a must be 0..3");
}

/* Element counts as nccl-tests' getCollByteCount: send/recv counts, the "count" column, and the printed size. */
static void coll_counts(enum coll c, long size, int nranks, long *sendcount, long *recvcount, long *paramcount)
{
    long count = size / 4;
    long part = count / nranks;
    switch (c) {
    case C_ALL_GATHER:
        *sendcount = part;
        *recvcount = part * nranks;
        *paramcount = part;
        break;
    case C_ALLTOALL:
        *sendcount = part * nranks;
        *recvcount = part * nranks;
        *paramcount = part;
        break;
    case C_REDUCE_SCATTER:
        *sendcount = part * nranks;
        *recvcount = part;
        *paramcount = part;
        break;
    default:
        *sendcount = count;
        *recvcount = count;
        *paramcount = count;
        break;
    }
}

static double bus_factor(enum coll c, int nranks)
{
    switch (c) {
    case C_ALL_REDUCE:
        return 2.0 * (nranks - 1) / nranks;
    case C_ALL_GATHER:
    case C_ALLTOALL:
    case C_REDUCE_SCATTER:
        return (double)(nranks - 1) / nranks;
    default:
        return 1.0;
    }
}

/* Small integers, so every sum over ranks is exact in float. */
static float seed_value(int rank, long index)
{
    return (float)((rank + 1) + (index % 13));
}

static void fill_send(enum coll c, float *send, long sendcount, long part)
{
    for (long i = 0; i < sendcount; i++) {
        /* alltoall: the block for destination d carries (rank, d, offset) */
        long key = (c == C_ALLTOALL) ? (i / (part ? part : 1)) * 7 + i % (part ? part : 1) : i;
        send[i] = seed_value(g_rank, key);
    }
}

static float expected(enum coll c, long i, long part, int root)
{
    float total = 0.0f;
    switch (c) {
    case C_ALL_REDUCE:
        for (int r = 0; r < g_nranks; r++)
            total += seed_value(r, i);
        return total;
    case C_REDUCE_SCATTER:
        for (int r = 0; r < g_nranks; r++)
            total += seed_value(r, (long)g_rank * part + i);
        return total;
    case C_ALL_GATHER:
        return seed_value((int)(i / part), i % part);
    case C_ALLTOALL:
        /* block b came from rank b, which filled its block for us (g_rank) */
        return seed_value((int)(i / part), (long)g_rank * 7 + i % part);
    case C_BROADCAST:
        return seed_value(root, i);
    case C_SENDRECV:
        return seed_value((g_rank - 1 + g_nranks) % g_nranks, i);
    default:
        return 0.0f;
    }
}

static void run_once(enum coll c, float *send, float *recv, long sendcount, long recvcount, long part, int root,
                     int in_place)
{
    int next = (g_rank + 1) % g_nranks;
    int prev = (g_rank - 1 + g_nranks) % g_nranks;
    int rc = MPI_SUCCESS;
    switch (c) {
    case C_ALL_REDUCE:
        rc = in_place ? MPI_Allreduce(MPI_IN_PLACE, recv, (int)recvcount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
                      : MPI_Allreduce(send, recv, (int)recvcount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_ALL_GATHER:
        rc = in_place ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_FLOAT, recv, (int)part, MPI_FLOAT, MPI_COMM_WORLD)
                      : MPI_Allgather(send, (int)part, MPI_FLOAT, recv, (int)part, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case C_ALLTOALL:
        rc = in_place ? MPI_Alltoall(MPI_IN_PLACE, 0, MPI_FLOAT, recv, (int)part, MPI_FLOAT, MPI_COMM_WORLD)
                      : MPI_Alltoall(send, (int)part, MPI_FLOAT, recv, (int)part, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case C_REDUCE_SCATTER:
        rc = in_place ? MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
                      : MPI_Reduce_scatter_block(send, recv, (int)part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_BROADCAST:
        if (!in_place && g_rank == root)
            memcpy(recv, send, (size_t)recvcount * sizeof(float));
        rc = MPI_Bcast(recv, (int)recvcount, MPI_FLOAT, root, MPI_COMM_WORLD);
        break;
    case C_SENDRECV:
        rc = in_place ? MPI_Sendrecv_replace(recv, (int)recvcount, MPI_FLOAT, next, 0, prev, 0, MPI_COMM_WORLD,
                                             MPI_STATUS_IGNORE)
                      : MPI_Sendrecv(send, (int)sendcount, MPI_FLOAT, next, 0, recv, (int)recvcount, MPI_FLOAT, prev,
                                     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    default:
        break;
    }
    (void)sendcount;
    if (rc != MPI_SUCCESS)
        die("nccl-tests CPU stand-in: Test failure (MPI collective returned an error)");
}

/* Load the input of one operation into place (the in-place variants reuse the receive buffer). */
static void prepare(enum coll c, float *send, float *recv, long sendcount, long recvcount, long part, int in_place)
{
    if (!in_place)
        return;
    switch (c) {
    case C_ALL_REDUCE:
    case C_ALLTOALL:
    case C_SENDRECV:
    case C_REDUCE_SCATTER:
        memcpy(recv, send, (size_t)sendcount * sizeof(float));
        break;
    case C_ALL_GATHER:
        memcpy(recv + (long)g_rank * part, send, (size_t)part * sizeof(float));
        break;
    case C_BROADCAST:
        memcpy(recv, send, (size_t)recvcount * sizeof(float));
        break;
    default:
        break;
    }
}

static long count_wrong(enum coll c, const float *recv, long recvcount, long part, int root, int corrupt)
{
    long wrong = 0;
    long n = (c == C_REDUCE_SCATTER) ? part : recvcount;
    for (long i = 0; i < n; i++) {
        float got = recv[i];
        if (corrupt && g_rank == 0 && i % 97 == 0)
            got += 1.0f;
        if (got != expected(c, i, part, root))
            wrong++;
    }
    return wrong;
}

static void format_time(double usec, char *out, size_t len)
{
    if (usec >= 10000.0)
        snprintf(out, len, "%7.0f", usec);
    else if (usec >= 100.0)
        snprintf(out, len, "%7.1f", usec);
    else
        snprintf(out, len, "%7.2f", usec);
}

/* Time one variant; returns the per-iteration seconds (combined over ranks per -a) and #wrong summed over ranks. */
static void bench(enum coll c, const struct opts *o, float *send, float *recv, long sendcount, long recvcount,
                  long part, int in_place, int corrupt, double *seconds, long *wrong)
{
    double start, local, combined = 0.0;
    long local_wrong = 0;
    prepare(c, send, recv, sendcount, recvcount, part, in_place);
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (int it = 0; it < o->iters; it++) {
        for (int a = 0; a < o->agg_iters; a++) {
            run_once(c, send, recv, sendcount, recvcount, part, o->root, in_place);
        }
    }
    local = (MPI_Wtime() - start) / ((double)o->iters * o->agg_iters);
    switch (o->average) {
    case 0: combined = local; MPI_Bcast(&combined, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case 2: MPI_Allreduce(&local, &combined, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD); break;
    case 3: MPI_Allreduce(&local, &combined, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); break;
    default:
        MPI_Allreduce(&local, &combined, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        combined /= g_nranks;
        break;
    }
    *seconds = combined;
    *wrong = 0;
    if (o->check) {
        /* one fresh, untimed operation for the data check */
        prepare(c, send, recv, sendcount, recvcount, part, in_place);
        run_once(c, send, recv, sendcount, recvcount, part, o->root, in_place);
        local_wrong = count_wrong(c, recv, recvcount, part, o->root, corrupt);
        MPI_Allreduce(&local_wrong, wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
}

static void hang_if_asked(void)
{
    const char *hang = getenv("NCCL_STANDIN_HANG");
    if (hang && *hang && atoi(hang) == g_rank) {
        fprintf(stderr, "nccl-tests CPU stand-in: rank %d hangs on request (NCCL_STANDIN_HANG)\n", g_rank);
        fflush(stderr);
        for (;;)
            sleep(1);
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    enum coll c;
    struct peer me, *peers = NULL;
    char device[DEVICE_LEN];
    const char *corrupt_env = getenv("NCCL_STANDIN_CORRUPT");
    const char *device_env = getenv("NCCL_STANDIN_DEVICE");
    int corrupt = corrupt_env && strcmp(corrupt_env, "0") != 0 && *corrupt_env;
    long total_wrong = 0;
    double bw_sum = 0.0;
    int bw_count = 0;
    float *send, *recv;
    long alloc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
    setvbuf(stdout, NULL, _IOLBF, 0);

    c = coll_from_name(argv[0]);
    if (c == C_NONE)
        die_usage("nccl-tests CPU stand-in: cannot tell the collective from the program name (expected all_reduce_perf, "
            "all_gather_perf, alltoall_perf, reduce_scatter_perf, broadcast_perf or sendrecv_perf)");
    parse_args(argc, argv, &o);
    if (o.root < 0 || o.root >= g_nranks)
        o.root = 0;

    snprintf(device, sizeof device, "%s", device_env && *device_env ? device_env : "CPU-standin");
    memset(&me, 0, sizeof me);
    me.pid = (int)getpid();
    if (gethostname(me.host, HOST_LEN - 1) != 0)
        snprintf(me.host, HOST_LEN, "unknown");
    for (char *p = me.host; *p; p++)
        if (isspace((unsigned char)*p))
            *p = '_';
    if (g_rank == 0)
        peers = calloc((size_t)g_nranks, sizeof *peers);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, peers, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);

    if (g_rank == 0) {
        printf("# nccl-tests version %s nccl-headers=0 nccl-library=0\n", STANDIN_VERSION);
        printf("# Collective test starting: %s_perf\n", coll_names[c]);
        if (o.step_factor > 1)
            printf("# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(factor) warmup iters: %d iters: %d "
                   "agg iters: %d validation: %d graph: %d\n",
                   o.nthreads, o.ngpus, o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.agg_iters,
                   o.check, o.graph);
        else
            printf("# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(bytes) warmup iters: %d iters: %d "
                   "agg iters: %d validation: %d graph: %d\n",
                   o.nthreads, o.ngpus, o.min_bytes, o.max_bytes, o.step_bytes, o.warmup, o.iters, o.agg_iters,
                   o.check, o.graph);
        printf("#\n# Using devices\n");
        for (int r = 0; r < g_nranks; r++)
            printf("#  Rank %2d Group  0 Pid %6d on %10s device  0 [0x00] %s\n", r, peers[r].pid, peers[r].host, device);
        printf("#\n");
        printf("#                                                              out-of-place                       "
               "in-place          \n");
        printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
               "  busbw #wrong\n");
        printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
               "(GB/s)       \n");
        fflush(stdout);
        free(peers);
    }

    alloc = o.max_bytes / 4 + 16;
    send = malloc((size_t)alloc * sizeof(float));
    recv = malloc((size_t)alloc * sizeof(float));
    if (!send || !recv)
        die("nccl-tests CPU stand-in: out of memory for the buffers");
    memset(recv, 0, (size_t)alloc * sizeof(float));

    hang_if_asked();

    for (long size = o.min_bytes; size <= o.max_bytes;
         size = o.step_factor > 1 ? size * o.step_factor : size + o.step_bytes) {
        long sendcount, recvcount, part, printed;
        double t[2];
        long wrong[2];
        char times[2][32];
        double algbw[2], busbw[2];
        coll_counts(c, size, g_nranks, &sendcount, &recvcount, &part);
        if (part < 1)
            continue;
        printed = (c == C_REDUCE_SCATTER || c == C_ALLTOALL) ? sendcount * 4 : recvcount * 4;
        fill_send(c, send, sendcount, part);
        if (c == C_BROADCAST && g_rank != o.root)
            memset(send, 0, (size_t)sendcount * sizeof(float));
        for (int w = 0; w < o.warmup; w++)
            run_once(c, send, recv, sendcount, recvcount, part, o.root, 0);
        for (int v = 0; v < 2; v++) {
            bench(c, &o, send, recv, sendcount, recvcount, part, v, corrupt, &t[v], &wrong[v]);
            if (c == C_BROADCAST && g_rank != o.root)
                memset(recv, 0, (size_t)recvcount * sizeof(float));
            algbw[v] = t[v] > 0 ? (double)printed / 1.0e9 / t[v] : 0.0;
            busbw[v] = algbw[v] * bus_factor(c, g_nranks);
            format_time(t[v] * 1.0e6, times[v], sizeof times[v]);
            bw_sum += busbw[v];
            bw_count++;
        }
        total_wrong += wrong[0] + (c == C_SENDRECV ? 0 : wrong[1]);
        if (g_rank == 0) {
            char w0[32], w1[32];
            if (o.check)
                snprintf(w0, sizeof w0, "%5ld", wrong[0]);
            else
                snprintf(w0, sizeof w0, "%5s", "N/A");
            if (o.check && c != C_SENDRECV)
                snprintf(w1, sizeof w1, "%5ld", wrong[1]);
            else
                snprintf(w1, sizeof w1, "%5s", "N/A");
            printf("%12ld  %12ld  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s  %7s  %6.2f  %6.2f  %5s\n", printed, part, "float",
                   (c == C_ALL_REDUCE || c == C_REDUCE_SCATTER || c == C_SENDRECV) ? "sum" : "none",
                   c == C_BROADCAST ? o.root : -1, times[0], algbw[0], busbw[0], w0, times[1], algbw[1], busbw[1], w1);
            fflush(stdout);
        }
    }
    if (g_rank == 0) {
        printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g \n", bw_count ? bw_sum / bw_count : 0.0);
        printf("#\n# Collective test concluded: %s_perf\n#\n\n", coll_names[c]);
        fflush(stdout);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
