package io.iotarget.frontend.nbd;

import io.iotarget.backend.NullBackend;
import io.iotarget.model.Device;

import java.io.IOException;

/**
 * The out-of-memory drill, run in a JVM of its own with a small direct-memory limit by
 * {@link OutOfMemoryDrillTest}: clients ask for more data buffers than the limit allows, then
 * go away, and the server must have survived, failed only the requests it could not hold,
 * let go of everything, and serve again once memory is back. Prints each step; exits 1 on the
 * first failure.
 */
final class OutOfMemoryDrill {
    static final int BIG_READ = 32 << 20;

    public static void main(String[] args) throws Exception {
        try (TestTarget t = new TestTarget()) {
            Device device = t.export("drill", new NullBackend(256L << 20, 512, false), false);
            // Parked reads keep their buffers: two of 32 MiB fill a 72 MiB limit.
            t.engine.controller().write("tenants/drill/io.max", device.number() + " riops=2");
            RawClient holder = RawClient.connect(t.port, "drill", false);
            holder.request(0, NbdWire.CMD_READ, 1, 0, BIG_READ);
            holder.request(0, NbdWire.CMD_READ, 2, BIG_READ, BIG_READ);
            Thread.sleep(200);
            step("two parked 32 MiB reads hold most of the direct memory");

            try (RawClient starved = RawClient.connect(t.port, "drill", false)) {
                starved.request(0, NbdWire.CMD_READ, 3, 2L * BIG_READ, BIG_READ);
                RawClient.Reply r = starved.reply(BIG_READ);
                check(r.cookie() == 3 && r.error() == NbdWire.ENOMEM, "a read that finds no memory fails with ENOMEM: error " + r.error());
                starved.request(0, NbdWire.CMD_READ, 4, 0, 4096);
                check(starved.reply(4096).error() == 0, "and its connection goes on serving small requests");
                byte[] write = new byte[BIG_READ];
                starved.write(0, 5, 0, write);
                check(starved.reply(0).error() == NbdWire.ENOMEM, "a write that finds no memory fails with ENOMEM, its payload read and dropped");
                starved.request(0, NbdWire.CMD_FLUSH, 6, 0, 0);
                check(starved.reply(0).error() == 0, "and the stream stays in step");
            }
            step("requests that could not get memory failed cleanly");

            check(holder.reply(BIG_READ).error() == 0 && holder.reply(BIG_READ).error() == 0, "the parked reads complete (the releaser survived)");
            holder.close();
            step("the parked reads were released");

            long deadline = System.nanoTime() + 20_000_000_000L;
            while (t.server.connectionCount() != 0 && System.nanoTime() < deadline) Thread.sleep(10);
            check(t.server.connectionCount() == 0, "every connection ended");
            System.gc();
            try (RawClient later = RawClient.connect(t.port, "drill", false)) {
                later.request(0, NbdWire.CMD_READ, 7, 0, BIG_READ);
                check(later.reply(BIG_READ).error() == 0, "with memory back, a 32 MiB read succeeds again");
            }
            step("accept and transmission work again with memory back");

            t.server.tree().write("exports/drill/enable", "0");
            deadline = System.nanoTime() + 10_000_000_000L;
            while (t.engine.users(device) != 0 && System.nanoTime() < deadline) Thread.sleep(10);
            check(t.engine.users(device) == 0, "no connection kept a hold on the export's device");
            t.engine.removeDevice(device);
            step("the export was disabled and its device removed");
        } catch (IOException | RuntimeException | Error e) {
            e.printStackTrace(System.out);
            System.out.println("DRILL FAILED: " + e);
            System.exit(1);
        }
        System.out.println("DRILL PASSED");
        System.exit(0);
    }

    private static void step(String what) {
        System.out.println("drill: " + what);
    }

    private static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }
}
