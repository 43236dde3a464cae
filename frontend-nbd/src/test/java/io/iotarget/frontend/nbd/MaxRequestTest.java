package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 23 item 5: READ and WRITE payloads up to {@code max_request} (64 MiB by default, as
 * nbdkit and nbd-server take), advertised in NBD_INFO_BLOCK_SIZE; longer ones are refused as the
 * spec says (EINVAL, EOVERFLOW for a DF read) and the connection goes on. Real clients: nbdinfo
 * shows the maximum, libnbd moves 64 MiB in one request. libnbd itself never sends more than
 * 64 MiB (ERANGE on the client side, strict mode or not), so a request one byte over the default
 * comes from the raw test client, and libnbd with strict mode off meets a lowered maximum.
 */
class MaxRequestTest {
    private static final int MiB = 1 << 20;
    private static final long EXPORT_BYTES = 256L * MiB;
    private static final String PYTHON = "/usr/bin/python3";

    @Test
    void shouldTakeRequestsUpToTheAdvertisedMaximumAndRefuseLongerOnes() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Tools.require("libnbd's Python binding (python3-libnbd)", "/usr/lib/python3/dist-packages/nbd.py");
        try (TestTarget t = new TestTarget()) {
            t.memoryExport("big", EXPORT_BYTES);
            assertEquals(64 * MiB + "\n", t.server.tree().read("max_request"));
            assertTrue(Tools.ok(60, "nbdinfo", t.uri("big")).contains("block_size_maximum: " + 64 * MiB), "advertised in NBD_INFO_BLOCK_SIZE");

            // One 64 MiB write and one 64 MiB read, each a single request, read back equal.
            String out = libnbd(t.uri("big"), """
                    import os
                    data = os.urandom(64 << 20)
                    h.pwrite(data, 4096)
                    assert h.pread(64 << 20, 4096) == data, "read back differs"
                    print("ok", h.get_block_size(nbd.SIZE_MAXIMUM))
                    """);
            assertEquals("ok " + 64 * MiB, out.strip());

            try (RawClient c = RawClient.connect(t.port, "big", false)) {
                c.request(0, NbdWire.CMD_READ, 1, 0, 64L * MiB + 1);
                assertEquals(NbdWire.EINVAL, c.reply(0).error(), "a read one byte over the maximum");
                c.write(0, 2, 0, new byte[64 * MiB + 1]);
                assertEquals(NbdWire.EINVAL, c.reply(0).error(), "a write one byte over the maximum; its payload is skipped");
                c.request(0, NbdWire.CMD_READ, 3, 0, 4096);
                assertEquals(0, c.reply(4096).error(), "and the stream stays in step");
            }
            try (RawClient c = RawClient.connect(t.port, "big", true)) {
                c.request(NbdWire.CMD_FLAG_DF, NbdWire.CMD_READ, 4, 0, 64L * MiB + 1);
                assertEquals(NbdWire.EOVERFLOW, c.reply(0).error(), "a DF read over the maximum");
            }

            // A lower maximum is told to clients that connect afterwards and held to them.
            t.server.tree().write("max_request", Integer.toString(32 * MiB));
            out = libnbd(t.uri("big"), """
                    h.set_strict_mode(0)                  # let the request reach the server
                    try:
                        h.pread(64 << 20, 0)
                        print("taken")
                    except nbd.Error as e:
                        print(h.get_block_size(nbd.SIZE_MAXIMUM), e.errno)
                    """);
            assertEquals(32 * MiB + " EINVAL", out.strip());

            for (String bad : new String[]{"3000000", "524288", Long.toString(t.engine.buffers().shareBytes() * 2), "abc"}) {
                ControlException e = assertThrows(ControlException.class, () -> t.server.tree().write("max_request", bad), bad);
                assertEquals(Errno.EINVAL, e.errno(), e.getMessage());
            }
            assertEquals(32 * MiB + "\n", t.server.tree().read("max_request"), "a refused write changes nothing");
            assertEquals(0, t.server.unexpectedErrors());
        }
    }

    /** Runs {@code script} with {@code h}, a libnbd handle connected to {@code uri}; its output. */
    private static String libnbd(String uri, String script) throws Exception {
        String prologue = "import nbd\nh = nbd.NBD()\nh.connect_uri(\"" + uri + "\")\n";
        return Tools.ok(120, PYTHON, "-c", prologue + script);
    }
}
