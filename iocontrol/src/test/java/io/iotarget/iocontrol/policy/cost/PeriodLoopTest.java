package io.iotarget.iocontrol.policy.cost;

import org.junit.jupiter.api.Test;

import static io.iotarget.iocontrol.policy.cost.CostTunables.MILLION;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VTIME_PER_USEC;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The period loop's decisions on the package documentation's numbers (section 6, and the
 * donation and seed-000 examples of section 7), on the functions alone: no device, no clock.
 * CostArithmeticTest runs the same loop through the controller.
 */
class PeriodLoopTest {
    /** The default QoS period, µs (50 ms: twice the SSD_DFL latency target of 25 ms). */
    private static final long PERIOD_US = 50_000;
    /** No latency targets (rpct = wpct = 0, the default): every miss is allowed. */
    private static final long[] NO_TARGETS = {MILLION, MILLION};
    private static final long[] NONE_MISSED = {0, 0};

    @Test
    void shouldCountMissedSamplesInPpmRoundedUp() {
        assertEquals(0, PeriodLoop.missedPpm(0, 0), "no samples, nothing missed");
        assertEquals(0, PeriodLoop.missedPpm(10, 0));
        assertEquals(333_334, PeriodLoop.missedPpm(2, 1), "1 of 3, rounded up");
        assertEquals(MILLION, PeriodLoop.missedPpm(0, 7));
    }

    @Test
    void shouldMeasureRqWaitAsAPercentOfThePeriod() {
        assertEquals(5, PeriodLoop.rqWaitPct(2_500_000, PERIOD_US), "2.5 ms waited in a 50 ms period");
        assertEquals(4, PeriodLoop.rqWaitPct(2_499_999, PERIOD_US), "rounded down");
        assertEquals(0, PeriodLoop.rqWaitPct(0, PERIOD_US));
    }

    @Test
    void shouldRaiseTheBusyLevelWhenRqWaitIsOverFivePercent() {
        // Step 4: up by one when rq_wait > 5%, from at least 0.
        assertEquals(1, PeriodLoop.nextBusyLevel(0, 6, NONE_MISSED, NO_TARGETS, 1, 0));
        assertEquals(1, PeriodLoop.nextBusyLevel(-7, 6, NONE_MISSED, NO_TARGETS, 1, 0), "a negative level restarts at 0 + 1");
        assertEquals(4, PeriodLoop.nextBusyLevel(3, 6, NONE_MISSED, NO_TARGETS, 0, 0));
        // 5% itself is not busy, and above 75% of it (3.75, so 4 and 5) is the hysteresis band.
        assertEquals(0, PeriodLoop.nextBusyLevel(3, 5, NONE_MISSED, NO_TARGETS, 1, 0));
        assertEquals(0, PeriodLoop.nextBusyLevel(-3, 4, NONE_MISSED, NO_TARGETS, 1, 0));
    }

    @Test
    void shouldRaiseTheBusyLevelWhenMoreThanTheAllowedShareOfReadsOrWritesMissed() {
        // rpct=90: 10% of the reads may miss their target (threshold 100000 ppm); wpct=0: any write may.
        long[] readTarget = {MILLION - 900_000, MILLION};
        assertEquals(1, PeriodLoop.nextBusyLevel(0, 0, new long[] {100_001, 0}, readTarget, 1, 0));
        assertEquals(0, PeriodLoop.nextBusyLevel(0, 0, new long[] {100_000, 0}, readTarget, 1, 0), "at the threshold: the band");
        assertEquals(0, PeriodLoop.nextBusyLevel(0, 0, new long[] {75_001, 0}, readTarget, 1, 0), "above 75% of it: the band");
        assertEquals(-1, PeriodLoop.nextBusyLevel(0, 0, new long[] {75_000, 0}, readTarget, 1, 0), "at 75% of it: clearly not busy");
        long[] writeTarget = {MILLION, MILLION - 950_000};
        assertEquals(1, PeriodLoop.nextBusyLevel(-2, 0, new long[] {MILLION, 50_001}, writeTarget, 1, 0));
    }

    @Test
    void shouldLowerTheBusyLevelOnlyWhileSomeoneIsShortAndNothingLags() {
        // Clearly below the thresholds (rq_wait ≤ 3%): down by one, from at most 0 ...
        assertEquals(-1, PeriodLoop.nextBusyLevel(0, 3, NONE_MISSED, NO_TARGETS, 1, 0));
        assertEquals(-1, PeriodLoop.nextBusyLevel(5, 3, NONE_MISSED, NO_TARGETS, 1, 0));
        assertEquals(-5, PeriodLoop.nextBusyLevel(-4, 0, NONE_MISSED, NO_TARGETS, 2, 0));
        // ... held while an IO has been in flight for over a period ...
        assertEquals(-4, PeriodLoop.nextBusyLevel(-4, 0, NONE_MISSED, NO_TARGETS, 2, 1));
        assertEquals(0, PeriodLoop.nextBusyLevel(5, 0, NONE_MISSED, NO_TARGETS, 2, 1));
        // ... and 0 when nobody was short of budget: nothing learned.
        assertEquals(0, PeriodLoop.nextBusyLevel(-4, 0, NONE_MISSED, NO_TARGETS, 0, 0));
    }

    @Test
    void shouldClampTheBusyLevel() {
        assertEquals(1000, PeriodLoop.nextBusyLevel(1000, 50, NONE_MISSED, NO_TARGETS, 1, 0));
        assertEquals(-1000, PeriodLoop.nextBusyLevel(-1000, 0, NONE_MISSED, NO_TARGETS, 1, 0));
    }

    @Test
    void shouldMoveVrateByZeroForThreePeriodsThenOneTwoFourEightSixteenPercent() {
        long hundred = VTIME_PER_USEC;      // 137438: vrate 100%
        long min = hundred / 100;
        long max = hundred * 100;
        // Step 5: vrate_adj_pct[|busy level|]: 0% at levels 1-3, then 1% (4-19), 2% (20-35),
        // 4% (36-43), 8% (44-51) and 16% from 52 on; down when busy, up when not; rounded up.
        for (int level = 1; level <= 3; level++) {
            assertEquals(hundred, PeriodLoop.nextBaseVrate(hundred, min, max, level, 0));
            assertEquals(hundred, PeriodLoop.nextBaseVrate(hundred, min, max, -level, 0));
        }
        assertEquals(136_064, PeriodLoop.nextBaseVrate(hundred, min, max, 4, 0), "ceil(137438 × 0.99)");
        assertEquals(138_813, PeriodLoop.nextBaseVrate(hundred, min, max, -4, 0), "ceil(137438 × 1.01)");
        assertEquals(136_064, PeriodLoop.nextBaseVrate(hundred, min, max, 19, 0));
        assertEquals(134_690, PeriodLoop.nextBaseVrate(hundred, min, max, 20, 0), "2%");
        assertEquals(131_941, PeriodLoop.nextBaseVrate(hundred, min, max, 36, 0), "4%");
        assertEquals(126_443, PeriodLoop.nextBaseVrate(hundred, min, max, 44, 0), "8%");
        assertEquals(115_448, PeriodLoop.nextBaseVrate(hundred, min, max, 52, 0), "16%");
        assertEquals(159_429, PeriodLoop.nextBaseVrate(hundred, min, max, -1000, 0), "16% up");
        // Level 0 holds vrate; so does a negative level while IO lags.
        assertEquals(hundred, PeriodLoop.nextBaseVrate(hundred, min, max, 0, 0));
        assertEquals(hundred, PeriodLoop.nextBaseVrate(hundred, min, max, -20, 1));
        assertEquals(134_690, PeriodLoop.nextBaseVrate(hundred, min, max, 20, 1), "lagging does not hold a positive level");
        // Within [min, max].
        assertEquals(max, PeriodLoop.nextBaseVrate(max, min, max, -52, 0));
        assertEquals(min, PeriodLoop.nextBaseVrate(min, min, max, 52, 0));
    }

    @Test
    void shouldWalkVrateBackIntoItsBoundsFourPercentPerPeriod() {
        // Seed 000: io.cost.qos min=1.00 max=1.00 pins vrate to 1% (vrateMin = ceil(1374.38),
        // vrateMax = floor(1374.38)); from 100% it walks down 4% per period, whatever the level's step.
        long vrateMin = 1375;
        long vrateMax = 1374;
        long vrate = VTIME_PER_USEC;
        assertEquals(131_940, PeriodLoop.nextBaseVrate(vrate, vrateMin, vrateMax, 1, 0), "137438 × 0.96, rounded down");
        assertEquals(131_940, PeriodLoop.nextBaseVrate(vrate, vrateMin, vrateMax, -1, 0), "down whatever the level's sign");
        int periods = 0;
        while (vrate > vrateMin) {
            vrate = PeriodLoop.nextBaseVrate(vrate, vrateMin, vrateMax, 1, 0);
            periods++;
        }
        assertEquals(1374, vrate, "it stops at the bound");
        assertEquals(113, periods, "0.96^113 < 1% < 0.96^112");
        // Below the minimum it walks up 4%, but not past it.
        assertEquals(1375, PeriodLoop.nextBaseVrate(1374, vrateMin, vrateMax, 1, 0));
        assertEquals(1040, PeriodLoop.nextBaseVrate(1000, 2000, 5000, -1, 0));
    }

    @Test
    void shouldMeasureTheDonorsUsageOfTheWorkedExample() {
        // Section 7, donation: b wrote 160 × 4 KiB sequentially, 160 × 2^21 vtime, which is
        // 2441 µs at vrate 100% (what iocg_flush_stat counts) in the 50 ms period: its usage is
        // ceil(2441 × 65536 / 50000) = 3200 of the device (4.9%).
        long usageUs = 160L * (1L << 21) / VTIME_PER_USEC;
        assertEquals(2441, usageUs);
        assertEquals(3200, PeriodLoop.usage(usageUs, PERIOD_US));
        // A group that used nothing still counts 1; more than the period counts the whole device.
        assertEquals(1, PeriodLoop.usage(0, PERIOD_US));
        assertEquals(CostTunables.WEIGHT_ONE, PeriodLoop.usage(2 * PERIOD_US, PERIOD_US));
    }
}
