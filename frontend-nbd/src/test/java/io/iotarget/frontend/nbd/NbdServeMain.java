package io.iotarget.frontend.nbd;

import io.iotarget.backend.Backend;
import io.iotarget.backend.FileBackend;
import io.iotarget.backend.MemoryBackend;
import io.iotarget.backend.NullBackend;
import io.iotarget.engine.Engine;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * A stand-alone NBD server for benchmarks and manual checks, until the control module's
 * {@code bin/iotarget serve} exists: one device named "default" exported as "default"
 * (bound to the root group).
 *
 * <pre>
 *   java -cp ... io.iotarget.frontend.nbd.NbdServeMain 127.0.0.1:10809 memory 1073741824
 *   java -cp ... io.iotarget.frontend.nbd.NbdServeMain 127.0.0.1:10809 file /tmp/disk.img
 * </pre>
 * Prints "listening on HOST:PORT" when ready; runs until killed.
 */
public final class NbdServeMain {
    private NbdServeMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: NbdServeMain HOST:PORT memory|null SIZE_BYTES | file PATH");
            System.exit(2);
        }
        int colon = args[0].lastIndexOf(':');
        InetSocketAddress address = new InetSocketAddress(args[0].substring(0, colon), Integer.parseInt(args[0].substring(colon + 1)));
        Backend backend = switch (args[1]) {
            case "memory" -> new MemoryBackend(Long.parseLong(args[2]), 512, false);
            case "null" -> new NullBackend(Long.parseLong(args[2]), 512, false);
            case "file" -> FileBackend.open(Path.of(args[2]), 512, false, false);
            default -> throw new IllegalArgumentException("backend " + args[1] + " (expected: memory, null or file)");
        };
        Engine engine = new Engine();
        NbdServer server = new NbdServer(engine);
        engine.addDevice("default", backend, null, Engine.DEFAULT_QUEUE_DEPTH);
        server.tree().mkdir("exports/default");
        server.tree().write("exports/default/backend", "default");
        server.tree().write("exports/default/enable", "1");
        server.listen(address);
        System.out.println("listening on " + server.localAddresses().getFirst().getHostString() + ":" + server.localAddresses().getFirst().getPort());
        System.out.flush();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            engine.close();
        }));
        Thread.currentThread().join();
    }
}
