package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.model.ControlException;

/**
 * io.max.burst.stat, read-only: the io.max.burst credit each limit has left now, against a full
 * credit, in the limit's unit (IOs or bytes), one line per device with some burst in effect:
 * <pre>
 * 259:0 riops=6400/8000
 * </pre>
 * A burst with no effect (io.max does not limit below its rate) is not listed. Not Linux's;
 * {@code top}, the web view and /metrics show the same ({@link ThrottlePolicy#burstCredits}).
 */
final class IoMaxBurstStatFile extends InterfaceFile {
    private final ThrottlePolicy policy;

    IoMaxBurstStatFile(ThrottlePolicy policy) {
        super("io.max.burst.stat", Placement.NOT_ON_ROOT, true);
        this.policy = policy;
    }

    @Override
    public String read(PolicyGroup group) throws ControlException {
        StringBuilder sb = new StringBuilder();
        String device = null;
        for (ThrottlePolicy.BurstCredit c : policy.burstCredits(group)) {
            String number = c.device().device().number().toString();
            if (!number.equals(device)) {
                if (device != null) sb.append('\n');
                sb.append(number);
                device = number;
            }
            sb.append(' ').append(c.limit()).append('=').append(c.left()).append('/').append(c.full());
        }
        return device == null ? "" : sb.append('\n').toString();
    }
}
