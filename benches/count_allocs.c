// An LD_PRELOAD allocation counter for black-box counts of a running server (see
// benches/count_allocs.sh, which builds and uses it).
//
//   gcc -O2 -shared -fPIC -o /tmp/count_allocs.so benches/count_allocs.c -ldl
//   LD_PRELOAD=/tmp/count_allocs.so COUNT_ALLOCS_OUT=/tmp/counts.txt SERVER...
//   kill -USR2 PID    # appends a dump of the counters so far to COUNT_ALLOCS_OUT
//
// Counts calls to malloc, calloc, realloc and the aligned family (posix_memalign, aligned_alloc,
// memalign, valloc, pvalloc) with atomic counters, in total and per thread. "allocs" is
// malloc + calloc + realloc + aligned: every call that may hand out new memory, the way the
// crate's counting global allocator counts (a Rust realloc counts as an allocation there too).
// The totals are dumped on SIGUSR2 and at exit, to the file named by COUNT_ALLOCS_OUT
// (appended) or to stderr. Each dump ends with a line "end SEQ".
//
// Backtraces (optional): with COUNT_ALLOCS_BT_FILE=path set, SIGUSR1 toggles recording; while
// on, one allocation in COUNT_ALLOCS_BT_EVERY (default 1: all of them) is written to that file
// as "A kind size tid" followed by a line of return addresses (glibc backtrace()). Turning it on
// first writes a copy of /proc/self/maps ("M ..." lines) so the addresses can be symbolized
// offline (addr2line). Only the counters' own code runs in the signal handlers; everything they
// do (open, read, write) is async-signal-safe.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

// dlsym may itself allocate (calloc for its error state): serve those from a static buffer.
static char bootstrap[64 * 1024] __attribute__((aligned(64)));
static atomic_size_t bootstrap_used;
static atomic_int resolving;

static atomic_ulong n_malloc, n_calloc, n_realloc, n_aligned, n_free, n_bytes;

#define MAX_THREADS 256
static struct {
    atomic_long tid;
    atomic_ulong allocs;
} threads[MAX_THREADS];
static __thread int my_slot __attribute__((tls_model("initial-exec"))) = -1;
static __thread int in_hook __attribute__((tls_model("initial-exec")));

static atomic_int bt_on;
static atomic_ulong bt_seq;
static unsigned long bt_every = 1;
static int bt_fd = -1;
static atomic_ulong dump_seq;

static int in_bootstrap(void *p) {
    return (char *)p >= bootstrap && (char *)p < bootstrap + sizeof bootstrap;
}

static void *bootstrap_alloc(size_t size) {
    size = (size + 63) & ~(size_t)63;
    size_t at = atomic_fetch_add(&bootstrap_used, size);
    if (at + size > sizeof bootstrap) return NULL;
    return bootstrap + at; // zeroed: static storage, never reused
}

static void resolve(void) {
    if (real_malloc) return;
    atomic_store(&resolving, 1);
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_valloc = dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
    atomic_store(&resolving, 0);
}

// ---- output without malloc or stdio (usable from signal handlers) ----

static char *put_str(char *p, const char *s) {
    while (*s) *p++ = *s++;
    return p;
}

static char *put_u64(char *p, unsigned long v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = '0' + v % 10; v /= 10; } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static char *put_hex(char *p, unsigned long v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
    *p++ = '0'; *p++ = 'x';
    while (n) *p++ = tmp[--n];
    return p;
}

static void write_all(int fd, const char *buf, size_t len) {
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) { if (errno == EINTR) continue; return; }
        buf += w; len -= (size_t)w;
    }
}

static void dump(const char *why) {
    int saved = errno;
    const char *path = getenv("COUNT_ALLOCS_OUT");
    int fd = 2;
    if (path && *path) fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) { errno = saved; return; }
    char buf[8192], *p = buf;
    unsigned long m = atomic_load(&n_malloc), c = atomic_load(&n_calloc),
                  r = atomic_load(&n_realloc), a = atomic_load(&n_aligned);
    p = put_str(p, "total ");
    p = put_str(p, why);
    p = put_str(p, " allocs="); p = put_u64(p, m + c + r + a);
    p = put_str(p, " malloc="); p = put_u64(p, m);
    p = put_str(p, " calloc="); p = put_u64(p, c);
    p = put_str(p, " realloc="); p = put_u64(p, r);
    p = put_str(p, " aligned="); p = put_u64(p, a);
    p = put_str(p, " free="); p = put_u64(p, atomic_load(&n_free));
    p = put_str(p, " bytes="); p = put_u64(p, atomic_load(&n_bytes));
    p = put_str(p, "\n");
    for (int i = 0; i < MAX_THREADS && p < buf + sizeof buf - 200; i++) {
        long tid = atomic_load(&threads[i].tid);
        if (!tid) continue;
        char comm[64] = "?";
        char path2[64], *q = path2;
        q = put_str(q, "/proc/self/task/"); q = put_u64(q, (unsigned long)tid);
        q = put_str(q, "/comm"); *q = 0;
        int cfd = open(path2, O_RDONLY | O_CLOEXEC);
        if (cfd >= 0) {
            ssize_t n = read(cfd, comm, sizeof comm - 1);
            close(cfd);
            if (n > 0) { comm[n] = 0; char *nl = strchr(comm, '\n'); if (nl) *nl = 0; }
            for (char *s = comm; *s; s++) if (*s == ' ') *s = '_';
        } else {
            strcpy(comm, "(exited)");
        }
        p = put_str(p, "thread tid="); p = put_u64(p, (unsigned long)tid);
        p = put_str(p, " name="); p = put_str(p, comm);
        p = put_str(p, " allocs="); p = put_u64(p, atomic_load(&threads[i].allocs));
        p = put_str(p, "\n");
    }
    p = put_str(p, "end "); p = put_u64(p, atomic_fetch_add(&dump_seq, 1) + 1);
    p = put_str(p, "\n");
    write_all(fd, buf, (size_t)(p - buf));
    if (fd != 2) close(fd);
    errno = saved;
}

static void copy_maps(int fd) {
    int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (mfd < 0) return;
    char buf[4096], line[4096];
    size_t len = 0;
    ssize_t n;
    while ((n = read(mfd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (len < sizeof line - 1) line[len++] = buf[i];
            if (buf[i] == '\n') {
                write_all(fd, "M ", 2);
                write_all(fd, line, len);
                len = 0;
            }
        }
    }
    close(mfd);
}

static void on_usr2(int sig) { (void)sig; dump("usr2"); }

static void on_usr1(int sig) {
    (void)sig;
    if (bt_fd < 0) return;
    int saved = errno;
    if (!atomic_load(&bt_on)) {
        copy_maps(bt_fd);
        write_all(bt_fd, "ON\n", 3);
        atomic_store(&bt_on, 1);
    } else {
        atomic_store(&bt_on, 0);
        write_all(bt_fd, "OFF\n", 4);
    }
    errno = saved;
}

// A forked child starts with its parent's counts but only one thread: recount its threads.
static void after_fork_child(void) {
    for (int i = 0; i < MAX_THREADS; i++) {
        atomic_store(&threads[i].tid, 0);
        atomic_store(&threads[i].allocs, 0);
    }
    my_slot = -1;
}

__attribute__((constructor)) static void init(void) {
    resolve();
    pthread_atfork(NULL, NULL, after_fork_child);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    const char *bt = getenv("COUNT_ALLOCS_BT_FILE");
    if (bt && *bt) {
        const char *every = getenv("COUNT_ALLOCS_BT_EVERY");
        if (every && atol(every) > 0) bt_every = (unsigned long)atol(every);
        bt_fd = open(bt, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        // The first backtrace() loads libgcc_s (and allocates): do it now, not inside malloc.
        void *frames[4];
        in_hook = 1;
        backtrace(frames, 4);
        in_hook = 0;
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
    }
}

__attribute__((destructor)) static void fini(void) { dump("exit"); }

static void record(atomic_ulong *kind, const char *name, size_t size) {
    atomic_fetch_add_explicit(kind, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_bytes, size, memory_order_relaxed);
    if (my_slot < 0) {
        long tid = syscall(SYS_gettid);
        for (int i = 0; i < MAX_THREADS; i++) {
            long expected = 0;
            if (atomic_load(&threads[i].tid) == tid ||
                atomic_compare_exchange_strong(&threads[i].tid, &expected, tid)) {
                my_slot = i;
                break;
            }
        }
    }
    if (my_slot >= 0) atomic_fetch_add_explicit(&threads[my_slot].allocs, 1, memory_order_relaxed);
    if (atomic_load_explicit(&bt_on, memory_order_relaxed) && !in_hook &&
        atomic_fetch_add(&bt_seq, 1) % bt_every == 0) {
        in_hook = 1;
        int saved = errno;
        void *frames[64];
        int n = backtrace(frames, 64);
        char buf[64 * 20 + 128], *p = buf;
        p = put_str(p, "A "); p = put_str(p, name);
        p = put_str(p, " "); p = put_u64(p, size);
        p = put_str(p, " "); p = put_u64(p, (unsigned long)syscall(SYS_gettid));
        p = put_str(p, "\n");
        for (int i = 2; i < n; i++) { // skip record() and the hook itself
            p = put_hex(p, (unsigned long)frames[i]);
            *p++ = ' ';
        }
        *p++ = '\n';
        write_all(bt_fd, buf, (size_t)(p - buf)); // one write: O_APPEND keeps records whole
        errno = saved;
        in_hook = 0;
    }
}

void *malloc(size_t size) {
    if (!real_malloc) {
        if (atomic_load(&resolving)) return bootstrap_alloc(size);
        resolve();
    }
    record(&n_malloc, "malloc", size);
    return real_malloc(size);
}

void *calloc(size_t n, size_t size) {
    if (!real_calloc) {
        if (atomic_load(&resolving)) return bootstrap_alloc(n * size);
        resolve();
    }
    record(&n_calloc, "calloc", n * size);
    return real_calloc(n, size);
}

void *realloc(void *ptr, size_t size) {
    if (in_bootstrap(ptr)) {
        void *fresh = malloc(size);
        if (fresh) memcpy(fresh, ptr, size); // the bootstrap block is at least as long: static
        return fresh;
    }
    if (!real_realloc) resolve();
    record(&n_realloc, "realloc", size);
    return real_realloc(ptr, size);
}

void free(void *ptr) {
    if (!ptr || in_bootstrap(ptr)) return;
    if (!real_free) resolve();
    atomic_fetch_add_explicit(&n_free, 1, memory_order_relaxed);
    real_free(ptr);
}

int posix_memalign(void **out, size_t align, size_t size) {
    if (!real_posix_memalign) resolve();
    record(&n_aligned, "posix_memalign", size);
    return real_posix_memalign(out, align, size);
}

void *aligned_alloc(size_t align, size_t size) {
    if (!real_aligned_alloc) resolve();
    record(&n_aligned, "aligned_alloc", size);
    return real_aligned_alloc(align, size);
}

void *memalign(size_t align, size_t size) {
    if (!real_memalign) resolve();
    record(&n_aligned, "memalign", size);
    return real_memalign(align, size);
}

void *valloc(size_t size) {
    if (!real_valloc) resolve();
    record(&n_aligned, "valloc", size);
    return real_valloc(size);
}

void *pvalloc(size_t size) {
    if (!real_pvalloc) resolve();
    record(&n_aligned, "pvalloc", size);
    return real_pvalloc(size);
}
