package io.iotarget.backend;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * The few Linux calls FileChannel does not offer: fallocate(2) for discard and write-zeroes,
 * lseek(2) for a block device's size and for SEEK_DATA/SEEK_HOLE. Reached through the FFM API;
 * the process needs {@code --enable-native-access=ALL-UNNAMED}. Any thread.
 */
final class LinuxCalls {
    static final int O_RDONLY = 0;
    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;

    static final int FALLOC_FL_KEEP_SIZE = 0x01;
    static final int FALLOC_FL_PUNCH_HOLE = 0x02;
    static final int FALLOC_FL_ZERO_RANGE = 0x10;

    static final int SEEK_END = 2;
    static final int SEEK_DATA = 3;
    static final int SEEK_HOLE = 4;

    static final int EOPNOTSUPP = 95;
    static final int ENXIO = 6;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final VarHandle ERRNO_HANDLE = Linker.Option.captureStateLayout()
            .varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle OPEN = downcall("open",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle CLOSE = downcall("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle FALLOCATE = downcall("fallocate",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    private static final MethodHandle LSEEK = downcall("lseek",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    private LinuxCalls() {
    }

    @SuppressWarnings("restricted")
    private static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LIBC.find(name).orElseThrow(() -> new IllegalStateException("libc has no " + name));
        return LINKER.downcallHandle(symbol, descriptor, ERRNO);
    }

    /** An errno from a failed call. */
    static final class ErrnoException extends IOException {
        private static final long serialVersionUID = 1L;
        final int errno;

        ErrnoException(String call, int errno) {
            super(call + " failed: errno " + errno);
            this.errno = errno;
        }
    }

    static int open(Path path, int flags) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
            MemorySegment name = arena.allocateFrom(path.toString());
            int fd = (int) OPEN.invokeExact(state, name, flags | O_CLOEXEC, 0);
            if (fd < 0) throw new ErrnoException("open(" + path + ")", errno(state));
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static void close(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) CLOSE.invokeExact(arena.allocate(Linker.Option.captureStateLayout()), fd);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static void fallocate(int fd, int mode, long offset, long length) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
            int rc = (int) FALLOCATE.invokeExact(state, fd, mode, offset, length);
            if (rc != 0) throw new ErrnoException("fallocate(mode=0x" + Integer.toHexString(mode) + ")", errno(state));
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** lseek(2); returns -errno instead of throwing, since ENXIO is an answer for SEEK_DATA/SEEK_HOLE. */
    static long lseek(int fd, long offset, int whence) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(Linker.Option.captureStateLayout());
            long rc = (long) LSEEK.invokeExact(state, fd, offset, whence);
            return rc < 0 ? -errno(state) : rc;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO_HANDLE.get(state, 0L);
    }
}
