package io.iotarget.backend.rbd;

import io.iotarget.backend.ErrnoException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The calls of Debian's librados.so.2 and librbd.so.1 the rbd backend makes, bound through the
 * FFM API by their C signatures (include/rados/librados.h and include/rbd/librbd.h of Ceph 16;
 * {@code size_t}, {@code ssize_t} and {@code uint64_t} are 64-bit on the 64-bit Linux targets
 * iotarget runs on). Nothing is compiled: the libraries are looked up when this class is first
 * used, and {@link #unavailable} says why they could not be. Any thread; the handles are
 * immutable. Every call returns librados' and librbd's {@code -errno} on failure, and
 * {@link #check} turns that into an {@link ErrnoException}.
 */
@SuppressWarnings("restricted") // the point of this class: binding librados and librbd
final class Librbd {
    /** RBD_FEATURE_LAYERING: the one feature images made by {@code create} get (see RbdBackend). */
    static final long FEATURE_LAYERING = 1;
    /** LIBRADOS_OP_FLAG_FADVISE_FUA: the write is durable when it completes. */
    static final int OP_FLAG_FUA = 0x80;
    /** RBD_WRITE_ZEROES_FLAG_THICK_PROVISION: zeroes stay allocated (no unmap). */
    static final int WRITE_ZEROES_THICK = 1;
    static final int ENOENT = 2;
    /** EBLOCKLISTED in Ceph's sources: the OSDs refuse this client. */
    static final int EBLOCKLISTED = 108;

    private static final Linker LINKER = Linker.nativeLinker();

    static final MethodHandle RADOS_CREATE2;
    static final MethodHandle RADOS_CONF_READ_FILE;
    static final MethodHandle RADOS_CONF_SET;
    static final MethodHandle RADOS_CONNECT;
    static final MethodHandle RADOS_SHUTDOWN;
    static final MethodHandle RADOS_IOCTX_CREATE;
    static final MethodHandle RADOS_IOCTX_DESTROY;
    static final MethodHandle RADOS_IOCTX_SET_NAMESPACE;
    static final MethodHandle RADOS_GETADDRS;
    static final MethodHandle RADOS_MON_COMMAND;
    static final MethodHandle RADOS_BUFFER_FREE;
    static final MethodHandle RADOS_CLUSTER_FSID;
    static final MethodHandle RADOS_WAIT_FOR_LATEST_OSDMAP;
    static final MethodHandle FREE;

    static final MethodHandle RBD_CREATE2;
    static final MethodHandle RBD_OPEN;
    static final MethodHandle RBD_OPEN_READ_ONLY;
    static final MethodHandle RBD_CLOSE;
    static final MethodHandle RBD_GET_SIZE;
    static final MethodHandle RBD_RESIZE;
    static final MethodHandle RBD_DIFF_ITERATE2;
    static final MethodHandle RBD_READ2;
    static final MethodHandle RBD_WRITE2;
    static final MethodHandle RBD_FLUSH;
    static final MethodHandle RBD_DISCARD;
    static final MethodHandle RBD_WRITE_ZEROES;
    static final MethodHandle RBD_AIO_CREATE_COMPLETION;
    static final MethodHandle RBD_AIO_GET_RETURN_VALUE;
    static final MethodHandle RBD_AIO_RELEASE;
    static final MethodHandle RBD_AIO_READ2;
    static final MethodHandle RBD_AIO_WRITE2;
    static final MethodHandle RBD_AIO_FLUSH;
    static final MethodHandle RBD_AIO_DISCARD;
    static final MethodHandle RBD_AIO_WRITE_ZEROES;

    /** {@code int (*cb)(uint64_t offset, size_t length, int exists, void *arg)} of rbd_diff_iterate2. */
    static final FunctionDescriptor DIFF_CALLBACK = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS);
    /** {@code void (*rbd_callback_t)(rbd_completion_t c, void *arg)}. */
    static final FunctionDescriptor COMPLETION_CALLBACK = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS);

    /** Why the libraries could not be bound, or null when they were. */
    private static final String UNAVAILABLE;

    static {
        MethodHandle[] h = new MethodHandle[34];
        String why = null;
        try {
            SymbolLookup rados = SymbolLookup.libraryLookup("librados.so.2", Arena.global());
            SymbolLookup rbd = SymbolLookup.libraryLookup("librbd.so.1", Arena.global());
            SymbolLookup libc = LINKER.defaultLookup();
            int i = 0;
            h[i++] = bind(rados, "rados_create2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));
            h[i++] = bind(rados, "rados_conf_read_file", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = bind(rados, "rados_conf_set", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = bind(rados, "rados_connect", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = bind(rados, "rados_shutdown", FunctionDescriptor.ofVoid(ADDRESS));
            h[i++] = bind(rados, "rados_ioctx_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = bind(rados, "rados_ioctx_destroy", FunctionDescriptor.ofVoid(ADDRESS));
            h[i++] = bind(rados, "rados_ioctx_set_namespace", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
            h[i++] = bind(rados, "rados_getaddrs", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            // int rados_mon_command(rados_t, const char **cmd, size_t cmdlen, const char *inbuf, size_t inbuflen,
            //                       char **outbuf, size_t *outbuflen, char **outs, size_t *outslen)
            h[i++] = bind(rados, "rados_mon_command",
                          FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = bind(rados, "rados_buffer_free", FunctionDescriptor.ofVoid(ADDRESS));
            h[i++] = bind(rados, "rados_cluster_fsid", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
            h[i++] = bind(rados, "rados_wait_for_latest_osdmap", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = bind(libc, "free", FunctionDescriptor.ofVoid(ADDRESS));
            h[i++] = bind(rbd, "rbd_create2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
            h[i++] = bind(rbd, "rbd_open", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = bind(rbd, "rbd_open_read_only", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = bind(rbd, "rbd_close", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = bind(rbd, "rbd_get_size", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = bind(rbd, "rbd_resize", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
            h[i++] = bind(rbd, "rbd_diff_iterate2",
                          FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_BYTE, JAVA_BYTE, ADDRESS, ADDRESS));
            h[i++] = bind(rbd, "rbd_read2", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT));
            h[i++] = bind(rbd, "rbd_write2", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT));
            h[i++] = bind(rbd, "rbd_flush", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            h[i++] = bind(rbd, "rbd_discard", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
            h[i++] = bind(rbd, "rbd_write_zeroes", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT));
            h[i++] = bind(rbd, "rbd_aio_create_completion", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            h[i++] = bind(rbd, "rbd_aio_get_return_value", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
            h[i++] = bind(rbd, "rbd_aio_release", FunctionDescriptor.ofVoid(ADDRESS));
            h[i++] = bind(rbd, "rbd_aio_read2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));
            h[i++] = bind(rbd, "rbd_aio_write2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));
            h[i++] = bind(rbd, "rbd_aio_flush", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            h[i++] = bind(rbd, "rbd_aio_discard", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
            h[i++] = bind(rbd, "rbd_aio_write_zeroes", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_INT));
            if (i != h.length) throw new AssertionError(i);
        } catch (IllegalArgumentException | IllegalCallerException e) {
            why = e.getMessage();
        }
        UNAVAILABLE = why;
        int i = 0;
        RADOS_CREATE2 = h[i++];
        RADOS_CONF_READ_FILE = h[i++];
        RADOS_CONF_SET = h[i++];
        RADOS_CONNECT = h[i++];
        RADOS_SHUTDOWN = h[i++];
        RADOS_IOCTX_CREATE = h[i++];
        RADOS_IOCTX_DESTROY = h[i++];
        RADOS_IOCTX_SET_NAMESPACE = h[i++];
        RADOS_GETADDRS = h[i++];
        RADOS_MON_COMMAND = h[i++];
        RADOS_BUFFER_FREE = h[i++];
        RADOS_CLUSTER_FSID = h[i++];
        RADOS_WAIT_FOR_LATEST_OSDMAP = h[i++];
        FREE = h[i++];
        RBD_CREATE2 = h[i++];
        RBD_OPEN = h[i++];
        RBD_OPEN_READ_ONLY = h[i++];
        RBD_CLOSE = h[i++];
        RBD_GET_SIZE = h[i++];
        RBD_RESIZE = h[i++];
        RBD_DIFF_ITERATE2 = h[i++];
        RBD_READ2 = h[i++];
        RBD_WRITE2 = h[i++];
        RBD_FLUSH = h[i++];
        RBD_DISCARD = h[i++];
        RBD_WRITE_ZEROES = h[i++];
        RBD_AIO_CREATE_COMPLETION = h[i++];
        RBD_AIO_GET_RETURN_VALUE = h[i++];
        RBD_AIO_RELEASE = h[i++];
        RBD_AIO_READ2 = h[i++];
        RBD_AIO_WRITE2 = h[i++];
        RBD_AIO_FLUSH = h[i++];
        RBD_AIO_DISCARD = h[i++];
        RBD_AIO_WRITE_ZEROES = h[i++];
    }

    private Librbd() {
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new IllegalArgumentException("no symbol " + name));
        return LINKER.downcallHandle(symbol, descriptor);
    }

    /** Null when librados.so.2 and librbd.so.1 are bound; otherwise why not (not installed: apt-get install librbd1). */
    static String unavailable() {
        return UNAVAILABLE;
    }

    /** An upcall stub for a static method of {@code owner} with {@code descriptor}, alive as long as {@code arena}. */
    static MemorySegment upcall(Class<?> owner, String method, MethodType type, FunctionDescriptor descriptor, Arena arena) {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(owner, method, type);
            return LINKER.upcallStub(target, descriptor, arena);
        } catch (NoSuchMethodException | IllegalAccessException e) {
            throw new AssertionError(e);
        }
    }

    /** Returns {@code result} when it is not negative; otherwise throws {@code -result} as the errno of {@code call}. */
    static long check(String call, long result) throws ErrnoException {
        if (result < 0) throw new ErrnoException(call, (int) -result);
        return result;
    }
}
