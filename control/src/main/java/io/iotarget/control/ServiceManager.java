package io.iotarget.control;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Tells the service manager how the server is doing, as sd_notify(3) does: one datagram of
 * {@code KEY=VALUE} lines to the AF_UNIX socket named by {@code $NOTIFY_SOCKET}. systemd's
 * {@code Type=notify} takes the server as started only on {@code READY=1}, which {@code serve}
 * sends once every listener is open, and as stopping on {@code STOPPING=1}. Without
 * {@code $NOTIFY_SOCKET} (not started by a service manager) nothing is sent.
 *
 * <p>The JDK has no datagram AF_UNIX socket, so this calls libc's socket(2), sendto(2) and
 * close(2) through the FFM API. A name starting with {@code @} is in the abstract namespace,
 * as sd_notify(3) says. A failure is returned, never thrown: the server serves whether or
 * not its manager heard it. Any thread.
 */
final class ServiceManager {
    static final String SOCKET_ENV = "NOTIFY_SOCKET";
    private static final int AF_UNIX = 1;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int MSG_NOSIGNAL = 0x4000;
    /** sizeof(struct sockaddr_un): sa_family_t, then sun_path[108]. */
    private static final int SOCKADDR_UN_BYTES = 110;
    private static final int SUN_PATH_BYTES = 108;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle SOCKET = libc("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle SENDTO = libc("sendto", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private ServiceManager() {
    }

    /**
     * Sends {@code state} (lines such as {@code READY=1}) to {@code $NOTIFY_SOCKET} of {@code env}.
     *
     * @return null when it was sent or there is no manager to tell, else why it was not
     */
    static String notify(Map<String, String> env, String state) {
        String name = env.get(SOCKET_ENV);
        if (name == null || name.isEmpty()) return null;
        byte[] path = name.getBytes(StandardCharsets.UTF_8);
        if (path.length >= SUN_PATH_BYTES || (path[0] != '/' && path[0] != '@')) return SOCKET_ENV + "=" + name + " is not a socket path";
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(SOCKADDR_UN_BYTES);
            address.set(JAVA_SHORT, 0, (short) AF_UNIX);
            MemorySegment.copy(path, 0, address, JAVA_BYTE, 2, path.length);
            int addressBytes = 2 + path.length + 1;
            if (path[0] == '@') {            // abstract: a leading NUL, and the length says where it ends
                address.set(JAVA_BYTE, 2, (byte) 0);
                addressBytes = 2 + path.length;
            }
            byte[] text = state.getBytes(StandardCharsets.UTF_8);
            MemorySegment message = arena.allocate(text.length);
            MemorySegment.copy(text, 0, message, JAVA_BYTE, 0, text.length);
            int fd = (int) SOCKET.invokeExact(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            if (fd < 0) return "socket(AF_UNIX, SOCK_DGRAM) failed";
            try {
                long sent = (long) SENDTO.invokeExact(fd, message, (long) text.length, MSG_NOSIGNAL, address, addressBytes);
                return sent == text.length ? null : "sendto(" + name + ") failed";
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (Throwable t) {
            return "cannot reach " + name + ": " + t;
        }
    }

    @SuppressWarnings("restricted")
    private static MethodHandle libc(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor);
    }
}
