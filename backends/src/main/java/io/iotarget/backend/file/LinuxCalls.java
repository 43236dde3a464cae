package io.iotarget.backend.file;

import io.iotarget.backend.ErrnoException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The Linux calls the file backend and the IO engines make through the FFM API: open(2) with
 * O_DIRECT, pread/pwrite/fdatasync on raw descriptors (so that every failure has its errno),
 * fallocate(2), lseek(2), posix_fadvise(2), mmap(2), and syscall(2) for io_uring_setup,
 * io_uring_enter and cachestat, which libc does not wrap. The process needs
 * {@code --enable-native-access=ALL-UNNAMED}. Any thread.
 *
 * <p>Calls on the IO path return {@code -errno} on failure instead of throwing; the rest
 * throw {@link ErrnoException}. Each thread captures errno in a segment of its own.
 */
final class LinuxCalls {
    static final int O_RDONLY = 0;
    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;
    /** Differs by architecture: x86-64 040000, arm64 0200000. */
    static final int O_DIRECT = System.getProperty("os.arch").equals("aarch64") ? 0x10000 : 0x4000;

    static final int FALLOC_FL_KEEP_SIZE = 0x01;
    static final int FALLOC_FL_PUNCH_HOLE = 0x02;
    static final int FALLOC_FL_ZERO_RANGE = 0x10;

    static final int SEEK_END = 2;
    static final int SEEK_DATA = 3;
    static final int SEEK_HOLE = 4;

    static final int POSIX_FADV_WILLNEED = 3;
    static final int POSIX_FADV_DONTNEED = 4;

    static final int PROT_READ = 1;
    static final int PROT_WRITE = 2;
    static final int MAP_SHARED = 1;
    static final int MAP_POPULATE = 0x8000;

    /** Generic syscall numbers, the same on x86-64 and arm64. */
    static final long SYS_IO_URING_SETUP = 425;
    static final long SYS_IO_URING_ENTER = 426;
    static final long SYS_CACHESTAT = 451;

    private static final int SC_PAGESIZE = 30;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final MemoryLayout CALL_STATE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO_HANDLE = CALL_STATE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    /** cachestat's {@code struct cachestat_range} (16 bytes) followed by its {@code struct cachestat} (5 × u64). */
    private static final long CACHESTAT_BYTES = 16 + 5 * 8;
    /** {@code struct iovec { void *iov_base; size_t iov_len; }}. */
    private static final long IOVEC_BYTES = 16;

    /** preadv2/pwritev2 flag: fail with EAGAIN instead of waiting (for the disk, for page cache room, for a lock). */
    static final int RWF_NOWAIT = 0x08;

    /** Where a thread's calls leave errno, and scratch memory for the structs a call takes. */
    private record PerThread(MemorySegment callState, MemorySegment cachestat, MemorySegment iovec) {
        static PerThread allocate() {
            Arena arena = Arena.ofAuto();
            return new PerThread(arena.allocate(CALL_STATE_LAYOUT), arena.allocate(CACHESTAT_BYTES, 8), arena.allocate(IOVEC_BYTES, 8));
        }
    }

    private static final ThreadLocal<PerThread> PER_THREAD = ThreadLocal.withInitial(PerThread::allocate);

    private static final MethodHandle OPEN = downcall("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    private static final MethodHandle CLOSE = downcall("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle PREAD = downcall("pread64", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle PWRITE = downcall("pwrite64", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle PREADV2 = downcall("preadv2",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle PWRITEV2 = downcall("pwritev2",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT));
    private static final MethodHandle FDATASYNC = downcall("fdatasync", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle FALLOCATE = downcall("fallocate",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle FSTATFS = downcall("fstatfs", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle LSEEK = downcall("lseek", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT));
    /** posix_fadvise returns the error number itself and leaves errno alone. */
    private static final MethodHandle FADVISE = downcall("posix_fadvise",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT), false);
    private static final MethodHandle MMAP = downcall("mmap",
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = downcall("munmap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle SYSCONF = downcall("sysconf", FunctionDescriptor.of(JAVA_LONG, JAVA_INT), false);
    /**
     * {@code long syscall(long number, ...)}: six variadic longs, the most any call here
     * takes; the kernel reads only the arguments of the call made, and every argument travels
     * as a long (pointers as addresses), as the variadic convention promotes them.
     */
    private static final MethodHandle SYSCALL = downcall("syscall",
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            true, Linker.Option.firstVariadicArg(1));

    /** Bytes per page, for cachestat's page counts. */
    static final long PAGE_BYTES = sysconf(SC_PAGESIZE);

    private LinuxCalls() {
    }

    private static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        return downcall(name, descriptor, true);
    }

    /** A handle on libc's {@code name}; with {@code errno}, its first parameter is where errno is captured. */
    @SuppressWarnings("restricted")
    private static MethodHandle downcall(String name, FunctionDescriptor descriptor, boolean errno, Linker.Option... more) {
        MemorySegment symbol = LIBC.find(name).orElseThrow(() -> new IllegalStateException("libc has no " + name));
        Linker.Option[] options = more;
        if (errno) {
            options = java.util.Arrays.copyOf(more, more.length + 1);
            options[more.length] = ERRNO;
        }
        return LINKER.downcallHandle(symbol, descriptor, options);
    }

    private static MemorySegment state() {
        return PER_THREAD.get().callState();
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO_HANDLE.get(state, 0L);
    }

    private static IllegalStateException unexpected(Throwable t) {
        return new IllegalStateException(t);
    }

    static int open(Path path, int flags) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = state();
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(path.toString()), flags | O_CLOEXEC, 0);
            if (fd < 0) throw new ErrnoException("open(" + path + ")", errno(state));
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(state(), fd);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** pread(2) into {@code buffer} (a native segment); bytes read, 0 at end of file, or -errno. */
    static long pread(int fd, MemorySegment buffer, long offset) {
        try {
            MemorySegment state = state();
            long n = (long) PREAD.invokeExact(state, fd, buffer, buffer.byteSize(), offset);
            return n < 0 ? -errno(state) : n;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** pwrite(2) from {@code buffer} (a native segment); bytes written or -errno. */
    static long pwrite(int fd, MemorySegment buffer, long offset) {
        try {
            MemorySegment state = state();
            long n = (long) PWRITE.invokeExact(state, fd, buffer, buffer.byteSize(), offset);
            return n < 0 ? -errno(state) : n;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * preadv2(2) or pwritev2(2) of one buffer (a native segment) with {@code flags} (RWF_*):
     * bytes transferred, or -errno.
     */
    static long transferV2(boolean write, int fd, MemorySegment buffer, long offset, int flags) {
        try {
            PerThread t = PER_THREAD.get();
            MemorySegment iov = t.iovec();
            iov.set(JAVA_LONG, 0, buffer.address());
            iov.set(JAVA_LONG, 8, buffer.byteSize());
            MemorySegment state = t.callState();
            long n = write ? (long) PWRITEV2.invokeExact(state, fd, iov, 1, offset, flags)
                    : (long) PREADV2.invokeExact(state, fd, iov, 1, offset, flags);
            return n < 0 ? -errno(state) : n;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static void fdatasync(int fd) throws ErrnoException {
        try {
            MemorySegment state = state();
            int rc = (int) FDATASYNC.invokeExact(state, fd);
            if (rc != 0) throw new ErrnoException("fdatasync", errno(state));
        } catch (ErrnoException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static void fallocate(int fd, int mode, long offset, long length) throws ErrnoException {
        try {
            MemorySegment state = state();
            int rc = (int) FALLOCATE.invokeExact(state, fd, mode, offset, length);
            if (rc != 0) throw new ErrnoException("fallocate(mode=0x" + Integer.toHexString(mode) + ")", errno(state));
        } catch (ErrnoException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code struct statfs} is 120 bytes on x86-64 and arm64; {@code f_type} comes first. */
    private static final long STATFS_BYTES = 128;
    static final long TMPFS_MAGIC = 0x01021994L;
    static final long RAMFS_MAGIC = 0x858458f6L;

    /** fstatfs(2)'s f_type: which file system holds the descriptor. */
    static long fileSystemType(int fd) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(STATFS_BYTES, 8);
            MemorySegment state = state();
            int rc = (int) FSTATFS.invokeExact(state, fd, buf);
            if (rc != 0) throw new ErrnoException("fstatfs", errno(state));
            return buf.get(JAVA_LONG, 0);
        } catch (ErrnoException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** lseek(2); returns -errno instead of throwing, since ENXIO is an answer for SEEK_DATA/SEEK_HOLE. */
    static long lseek(int fd, long offset, int whence) {
        try {
            MemorySegment state = state();
            long rc = (long) LSEEK.invokeExact(state, fd, offset, whence);
            return rc < 0 ? -errno(state) : rc;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** posix_fadvise(2); 0 or the error number. */
    static int fadvise(int fd, long offset, long length, int advice) {
        try {
            return (int) FADVISE.invokeExact(fd, offset, length, advice);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** A shared read-write mapping of {@code length} bytes of {@code fd} at {@code offset}. */
    @SuppressWarnings("restricted")
    static MemorySegment mmap(int fd, long length, long offset) throws ErrnoException {
        try {
            MemorySegment state = state();
            long address = (long) MMAP.invokeExact(state, 0L, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, offset);
            if (address == -1L) throw new ErrnoException("mmap", errno(state));
            return MemorySegment.ofAddress(address).reinterpret(length);
        } catch (ErrnoException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static void munmap(MemorySegment mapping) {
        try {
            int ignored = (int) MUNMAP.invokeExact(state(), mapping.address(), mapping.byteSize());
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** syscall(2) with up to six arguments (unused ones 0); the result, or -errno. */
    static long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
        try {
            MemorySegment state = state();
            long rc = (long) SYSCALL.invokeExact(state, number, a1, a2, a3, a4, a5, a6);
            return rc == -1 ? -errno(state) : rc;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    private static long sysconf(int name) {
        try {
            return (long) SYSCONF.invokeExact(name);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * cachestat(2) (Linux 6.5): whether every page of {@code [offset, offset + length)}
     * ({@code length} &gt; 0) is in the page cache. Returns 1 (all cached), 0 (not all), or -errno.
     */
    static int cachestat(int fd, long offset, long length) {
        /* struct cachestat_range { __u64 off, len; } at 0; struct cachestat { __u64 nr_cache,
         * nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; } at 16. */
        MemorySegment scratch = PER_THREAD.get().cachestat();
        scratch.set(JAVA_LONG, 0, offset);
        scratch.set(JAVA_LONG, 8, length);
        long rc = syscall(SYS_CACHESTAT, fd, scratch.address(), scratch.address() + 16, 0, 0, 0);
        if (rc < 0) return (int) rc;
        long pages = (offset + length - 1) / PAGE_BYTES - offset / PAGE_BYTES + 1;
        return scratch.get(JAVA_LONG, 16) >= pages ? 1 : 0;
    }
}
