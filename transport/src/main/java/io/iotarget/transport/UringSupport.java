package io.iotarget.transport;

import io.iotarget.model.uring.LoopRing;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.channels.Selector;

/**
 * What an io_uring event loop needs from the machine and the JDK: a ring the kernel grants
 * (not refused by kernel.io_uring_disabled, a seccomp profile or an old kernel) and the epoll
 * descriptor of the JDK's selector, which the loop polls on its ring so that sockets keep
 * their {@link java.nio.channels.SocketChannel}s. That descriptor is a private field of
 * {@code sun.nio.ch.EPollSelectorImpl}: readable only with
 * {@code --add-opens java.base/sun.nio.ch=ALL-UNNAMED} (the launcher, the jar's manifest and the
 * tests pass it). Any thread.
 */
final class UringSupport {
    private UringSupport() {
    }

    /** Why an io_uring loop cannot run here, or null when it can (a ring was set up and torn down, the descriptor read). */
    static String refusal() {
        try (Selector selector = Selector.open()) {
            epollFd(selector);
        } catch (IOException | RuntimeException e) {
            return "the selector's epoll descriptor is not readable (" + e.getMessage() + ")";
        }
        String[] failure = {null};
        // On a thread of its own: a ring binds to the thread that sets it up.
        Thread probe = Thread.ofPlatform().name("iotarget-uring-probe").unstarted(() -> {
            try (LoopRing ring = LoopRing.open(8)) {
                ring.enter(0);
            } catch (IOException | RuntimeException e) {
                failure[0] = e.getMessage();
            }
        });
        probe.start();
        try {
            probe.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while trying io_uring";
        }
        return failure[0];
    }

    /** The epoll descriptor of {@code selector}, a JDK EPollSelectorImpl. */
    static int epollFd(Selector selector) throws IOException {
        try {
            Field field = selector.getClass().getDeclaredField("epfd");
            field.setAccessible(true);
            return field.getInt(selector);
        } catch (NoSuchFieldException | IllegalAccessException e) {
            throw new IOException(selector.getClass().getName() + " has no readable epfd: " + e, e);
        } catch (RuntimeException e) {   // InaccessibleObjectException: java.base/sun.nio.ch is not opened
            throw new IOException(e.getMessage(), e);
        }
    }
}
