package io.iotarget.buffer;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Private anonymous memory that the pool maps and unmaps itself: mmap(2), munmap(2) and
 * madvise(2) reached through the FFM API (the process needs
 * {@code --enable-native-access=ALL-UNNAMED}). Linux only. Any thread.
 *
 * <p>A mapping lives in a shared {@link Arena} of its own whose close unmaps it, so a buffer
 * used after its memory was unmapped throws {@link IllegalStateException} instead of crashing
 * the process. Closing a shared arena costs a handshake with every thread (about 0.1 ms), which
 * is why mappings are made and closed only off the fast path (bench/results/buffers.md).
 */
final class AnonymousMemory {
    private static final int PROT_READ = 0x1;
    private static final int PROT_WRITE = 0x2;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final long MAP_FAILED = -1L;
    private static final int MADV_DONTNEED = 4;
    private static final int MADV_NOHUGEPAGE = 15;
    private static final int MADV_POPULATE_WRITE = 23;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final VarHandle ERRNO = Linker.Option.captureStateLayout()
            .varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle MMAP = downcall("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    private static final MethodHandle MUNMAP = downcall("munmap", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle MADVISE = downcall("madvise", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    private AnonymousMemory() {
    }

    @SuppressWarnings("restricted")
    private static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LIBC.find(name).orElseThrow(() -> new IllegalStateException("libc has no " + name));
        return LINKER.downcallHandle(symbol, descriptor, Linker.Option.captureCallState("errno"));
    }

    /**
     * Maps {@code bytes} of zero-filled, page-aligned memory in {@code arena}, which unmaps it
     * when closed; null when the kernel refuses (ENOMEM: no address space, or vm.max_map_count
     * reached). Nothing is resident until touched. {@code hugePages = false} keeps transparent
     * huge pages away, so that touching one small buffer of a mapping makes only its own pages
     * resident.
     */
    @SuppressWarnings("restricted")
    static MemorySegment map(long bytes, boolean hugePages, Arena arena) {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = call.allocate(Linker.Option.captureStateLayout());
            MemorySegment address = (MemorySegment) MMAP.invokeExact(state, MemorySegment.NULL, bytes,
                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
            if (address.address() == MAP_FAILED) return null;
            if (!hugePages) {
                // Refused (EINVAL) only by kernels without THP, where there is nothing to avoid.
                int ignored = (int) MADVISE.invokeExact(state, address, bytes, MADV_NOHUGEPAGE);
            }
            return address.reinterpret(bytes, arena, AnonymousMemory::unmap);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The arena's cleanup: gives the mapping back to the kernel. */
    private static void unmap(MemorySegment mapping) {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = call.allocate(Linker.Option.captureStateLayout());
            int rc = (int) MUNMAP.invokeExact(state, mapping, mapping.byteSize());
            check(rc, "munmap", mapping, state);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Drops the pages of {@code range} (MADV_DONTNEED): they read as zeroes when touched again. */
    static void dropPages(MemorySegment range) {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = call.allocate(Linker.Option.captureStateLayout());
            int rc = (int) MADVISE.invokeExact(state, range, range.byteSize(), MADV_DONTNEED);
            check(rc, "madvise(MADV_DONTNEED)", range, state);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Makes the pages of {@code range} resident now (MADV_POPULATE_WRITE, Linux 5.14): one call
     * instead of a page fault per page when the buffer is first written. Where the kernel
     * refuses, the pages are faulted in as they are written instead.
     */
    static void populate(MemorySegment range) {
        try (Arena call = Arena.ofConfined()) {
            MemorySegment state = call.allocate(Linker.Option.captureStateLayout());
            int ignored = (int) MADVISE.invokeExact(state, range, range.byteSize(), MADV_POPULATE_WRITE);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static void check(int rc, String call, MemorySegment range, MemorySegment state) {
        if (rc != 0) {
            throw new IllegalStateException(call + " of " + range.byteSize() + " bytes failed: errno " + (int) ERRNO.get(state, 0L));
        }
    }
}
