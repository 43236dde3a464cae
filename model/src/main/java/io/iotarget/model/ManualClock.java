package io.iotarget.model;

import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when told to: for tests and simulations. Any thread. */
public final class ManualClock implements Clock {
    private final AtomicLong nowNs;

    public ManualClock(long startNs) {
        this.nowNs = new AtomicLong(startNs);
    }

    @Override
    public long nanoTime() {
        return nowNs.get();
    }

    public long advance(long deltaNs) {
        return nowNs.addAndGet(deltaNs);
    }

    public void set(long nowNs) {
        this.nowNs.set(nowNs);
    }
}
