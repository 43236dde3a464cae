package io.iotarget.frontend.nbd;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An issuer delay (io.latency's use_delay, iocost's debt) stops the connection from taking
 * commands for the delay, as the kernel sleeps the issuing task: the reply that carried it goes
 * out at once, the next command is read only when the delay is over.
 */
class IssuerDelayTest {
    private static final long DELAY_NS = TimeUnit.MILLISECONDS.toNanos(300);

    @Test
    void shouldReadNoCommandDuringTheDelay() throws Exception {
        try (TestTarget t = new TestTarget()) {
            t.memoryExport("a", 1 << 20);
            try (RawClient c = RawClient.connect(t.port, "a", false)) {
                c.request(0, NbdWire.CMD_READ, 1, 0, 4096);
                assertEquals(0, c.reply(4096).error());
                NbdConnection connection = t.server.connections().iterator().next();

                long start = System.nanoTime();
                assertTrue(connection.delayIssuer(null, DELAY_NS), "the connection pauses itself");
                Thread.sleep(50);                                   // the pause is applied on the loop
                c.request(0, NbdWire.CMD_READ, 2, 0, 4096);
                RawClient.Reply delayed = c.reply(4096);
                long waitedNs = System.nanoTime() - start;
                assertEquals(2, delayed.cookie());
                assertTrue(waitedNs >= DELAY_NS, "answered after " + waitedNs + " ns");

                long again = System.nanoTime();
                c.request(0, NbdWire.CMD_READ, 3, 0, 4096);
                assertEquals(0, c.reply(4096).error());
                assertTrue(System.nanoTime() - again < DELAY_NS, "reading on once the delay is over");
            }
        }
    }
}
