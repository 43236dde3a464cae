package io.iotarget.frontend.nvmetcp;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An issuer delay (io.latency's use_delay, iocost's debt) stops the IO queue from taking
 * commands for the delay, as the kernel sleeps the issuing task; then it reads on.
 */
class IssuerDelayTest {
    private static final int READ = 0x02;
    private static final long DELAY_NS = TimeUnit.MILLISECONDS.toNanos(300);

    @Test
    void shouldReadNoCommandOnTheQueueDuringTheDelay() throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            try (TestHost admin = new TestHost(f.port, false, false)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 0);
                try (TestHost io = f.ioQueue(cntlid, 1, false, false, false)) {
                    assertEquals(0, io.execute(io.lbaCommand(READ, 1, 0, 8, 0), null, 4096, false).status());
                    Queue queue = f.target.connections(f.target.ports.get(1)).stream().filter(c -> c.qid() == 1).findFirst().orElseThrow();

                    long start = System.nanoTime();
                    queue.delayInput(DELAY_NS);
                    Thread.sleep(50);                               // the pause is applied on the loop
                    assertEquals(0, io.execute(io.lbaCommand(READ, 1, 8, 8, 0), null, 4096, false).status());
                    long waitedNs = System.nanoTime() - start;
                    assertTrue(waitedNs >= DELAY_NS, "answered after " + waitedNs + " ns");

                    long again = System.nanoTime();
                    assertEquals(0, io.execute(io.lbaCommand(READ, 1, 16, 8, 0), null, 4096, false).status());
                    assertTrue(System.nanoTime() - again < DELAY_NS, "reading on once the delay is over");
                }
            }
        }
    }
}
