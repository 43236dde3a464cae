package io.iotarget.iocontrol;

import io.iotarget.model.IoOp;
import org.junit.jupiter.api.Test;

import java.util.EnumMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Every request kind changes io.stat exactly as the kernel classifies the bio it would be.
 * The table must name every {@link IoOp}: a new kind added without deciding how it is charged
 * fails here.
 */
class IoStatClassificationTest {
    /** Expected io.stat deltas for one request of 4096 bytes: rbytes wbytes rios wios dbytes dios. */
    private static final Map<IoOp, long[]> EXPECTED = new EnumMap<>(IoOp.class);

    static {
        EXPECTED.put(IoOp.READ, new long[]{4096, 0, 1, 0, 0, 0});
        EXPECTED.put(IoOp.WRITE, new long[]{0, 4096, 0, 1, 0, 0});
        EXPECTED.put(IoOp.FLUSH, new long[]{0, 0, 0, 1, 0, 0});   // empty PREFLUSH write: wios += 1
        EXPECTED.put(IoOp.DISCARD, new long[]{0, 0, 0, 0, 4096, 1});
        EXPECTED.put(IoOp.WRITE_ZEROES, new long[]{0, 4096, 0, 1, 0, 0});
        EXPECTED.put(IoOp.CACHE, new long[]{4096, 0, 1, 0, 0, 0});
        EXPECTED.put(IoOp.VERIFY, new long[]{4096, 0, 1, 0, 0, 0});
        EXPECTED.put(IoOp.COMPARE, new long[]{4096, 0, 1, 0, 0, 0});
        EXPECTED.put(IoOp.PASSTHROUGH_IN, new long[]{4096, 0, 1, 0, 0, 0});
        EXPECTED.put(IoOp.PASSTHROUGH_OUT, new long[]{0, 4096, 0, 1, 0, 0});
    }

    @Test
    void shouldChargeEveryOpKindAsTheKernelClassifiesIt() throws Exception {
        for (IoOp op : IoOp.values()) {
            long[] want = EXPECTED.get(op);
            if (want == null) fail("no io.stat expectation for " + op + ": decide how the kernel would charge it");
            ControllerHarness h = new ControllerHarness();
            Group g = h.group("tenants/" + op.name().toLowerCase().replace('_', '-'));
            long length = op == IoOp.FLUSH ? 0 : 4096;
            h.submit(h.request(op, length, h.dev0, g));
            String expected = "259:0 " + (want[0] + want[1] + want[2] + want[3] == 0 ? ""
                    : "rbytes=" + want[0] + " wbytes=" + want[1] + " rios=" + want[2] + " wios=" + want[3]
                      + " dbytes=" + want[4] + " dios=" + want[5]) + "\n";
            assertEquals(expected, h.controller.read(g.path().substring(1) + "/io.stat"), op.name());
            // The parent and the root see it too: io.stat is hierarchical.
            assertEquals(expected, h.controller.read("tenants/io.stat"), op.name() + " in the parent");
            assertEquals(expected + "259:1 \n", h.controller.read("io.stat"), op.name() + " in the root");
        }
    }

    @Test
    void shouldPrintOnlyTheDeviceWhenOnlyDiscardsHappened() throws Exception {
        // The kernel prints the six fields only when one of rbytes/wbytes/rios/wios is non-zero.
        ControllerHarness h = new ControllerHarness();
        Group g = h.group("a");
        h.submit(h.request(IoOp.DISCARD, 1 << 20, h.dev1, g));
        assertEquals("259:1 \n", h.controller.read("a/io.stat"));
        h.submit(h.request(IoOp.READ, 512, h.dev1, g));
        assertEquals("259:1 rbytes=512 wbytes=0 rios=1 wios=0 dbytes=1048576 dios=1\n", h.controller.read("a/io.stat"));
    }

    @Test
    void shouldReturnNothingForAGroupThatNeverDidIo() throws Exception {
        ControllerHarness h = new ControllerHarness();
        h.group("idle");
        assertEquals("", h.controller.read("idle/io.stat"));
        assertEquals(true, h.controller.tree().flusher().idle());
    }
}
