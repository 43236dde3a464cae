package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.MulDiv;

import static io.iotarget.iocontrol.policy.cost.CostGroup.INDEBT;
import static io.iotarget.iocontrol.policy.cost.CostGroup.INDELAY;
import static io.iotarget.iocontrol.policy.cost.CostGroup.NOT_SET;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MAX_DELAY_THR_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MAX_DELAY_US;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MILLION;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MIN_DELAY_THR_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MIN_DELAY_US;

/**
 * Debt and the issuer delay on one device (package documentation, section 4): a request that
 * must not wait (META) goes out at once and its cost becomes its group's debt
 * ({@link #incur}, the kernel's {@code iocg_incur_debt}); while in debt the group donates all
 * its weight, and pays from its budget as vtime runs ({@link #payFromBudget},
 * {@code iocg_pay_debt}); a debt running far ahead of the device clock delays the group's
 * issuers ({@link #kickDelay}, {@code iocg_kick_delay}). The period loop's forgiveness of debts
 * on an idle device is {@link PeriodLoop}'s; {@link CostDevice} calls these from the IO path and
 * from {@code kickWaitq}.
 *
 * <p>Threads: the device's lock, as every {@link CostDevice} method. Time only through the
 * {@link DeviceNow} passed in.
 */
final class Debts {
    private final CostDevice device;

    Debts(CostDevice device) {
        this.device = device;
    }

    /** iocg_incur_debt: while in debt the group donates everything (inuse 1) until it has paid. */
    void incur(CostGroup g, long absCost, DeviceNow now) {
        if (g.absVdebt == 0 && absCost != 0) {
            g.indebtSinceUs = now.nowUs();
            device.weights.propagate(g, g.active, 0);
            device.weights.commit();
        }
        g.absVdebt = CostDevice.saturatedAdd(g.absVdebt, absCost);
        g.absVusage = CostDevice.saturatedAdd(g.absVusage, absCost);
    }

    /**
     * The first part of iocg_kick_waitq: the group pays what it can of its debt from a positive
     * budget {@code vbudget}, at its hweight_active {@code hwa}; its vtime advances by what it paid.
     *
     * @return what was paid, in vtime: the budget left is {@code vbudget} minus this
     */
    long payFromBudget(CostGroup g, long vbudget, long hwa, DeviceNow now) {
        long absVpay = Math.min(CostDevice.costToAbsCost(vbudget, hwa), g.absVdebt);
        long vpay = CostDevice.absCostToCost(absVpay, hwa);
        g.vtime += vpay;
        g.doneVtime += vpay;
        pay(g, absVpay, now);
        return vpay;
    }

    /** iocg_pay_debt: paid in full, the group gets its weight back. */
    private void pay(CostGroup g, long absVpay, DeviceNow now) {
        g.absVdebt -= Math.min(absVpay, g.absVdebt);
        if (g.absVdebt == 0) {
            g.localStat[INDEBT] += now.nowUs() - g.indebtSinceUs;
            g.indebtSinceUs = NOT_SET;
            device.weights.propagate(g, g.active, g.lastInuse);
            device.weights.commit();
        }
    }

    /**
     * iocg_kick_delay: a debtor's issuers are slowed down in proportion to how far the debt
     * runs ahead of the device clock: no delay up to 5 periods' worth, 250 ms from 250 periods,
     * linear between; a delay decays by half every second.
     *
     * @return true when a delay is in effect
     */
    boolean kickDelay(CostGroup g, DeviceNow now) {
        long elapsedUs = now.nowUs() - g.delayAtUs;
        long delay = g.delayUs != 0 ? shiftRight(g.delayUs, elapsedUs / MILLION) : 0;
        device.weights.currentHweight(g);
        long vover = g.vtime + CostDevice.absCostToCost(g.absVdebt, g.hweightActive) - now.vnow();
        long voverPct = vover > 0 ? MulDiv.floor(vover, 100, device.periodUs() * device.vtimeBaseRate) : 0;
        long newDelay;
        if (voverPct <= MIN_DELAY_THR_PCT) newDelay = 0;
        else if (voverPct >= MAX_DELAY_THR_PCT) newDelay = MAX_DELAY_US;
        else newDelay = MIN_DELAY_US + (MAX_DELAY_US - MIN_DELAY_US) * (voverPct - MIN_DELAY_THR_PCT) / (MAX_DELAY_THR_PCT - MIN_DELAY_THR_PCT);
        if (newDelay > delay) {
            g.delayUs = newDelay;
            g.delayAtUs = now.nowUs();
            delay = newDelay;
        }
        if (delay >= MIN_DELAY_US) {
            if (g.indelaySinceUs == NOT_SET) g.indelaySinceUs = now.nowUs();
            g.issuerDelayUs = delay;
            return true;
        }
        if (g.indelaySinceUs != NOT_SET) {
            g.localStat[INDELAY] += now.nowUs() - g.indelaySinceUs;
            g.indelaySinceUs = NOT_SET;
        }
        g.delayUs = 0;
        g.issuerDelayUs = 0;
        return false;
    }

    /** {@code value >> shift}, 0 once the shift reaches the width (Java masks shift counts). */
    static long shiftRight(long value, long shift) {
        return shift >= 63 ? 0 : value >>> shift;
    }
}
