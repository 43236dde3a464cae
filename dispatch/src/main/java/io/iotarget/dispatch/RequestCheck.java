package io.iotarget.dispatch;

import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

/**
 * Checks a request against its device before it enters the controller: a request that can
 * never succeed is refused without being charged, as the kernel's {@code bio_check_eod} and
 * read-only checks run before blk-throttle and io.stat.
 */
public final class RequestCheck {
    private RequestCheck() {
    }

    /** {@link IoStatus#OK}, or why the request must fail at once. */
    public static IoStatus check(IoRequest io) {
        IoOp op = io.op();
        Device device = io.device();
        if (op == null || device == null || io.group() == null || io.length() < 0) return IoStatus.INVALID;
        if (op == IoOp.FLUSH) return IoStatus.OK;
        if (op.modifiesMedia() && device.readOnly()) return IoStatus.READ_ONLY;
        if (!device.contains(io.offset(), io.length())) return IoStatus.OUT_OF_RANGE;
        int align = device.ioAlignment();
        if (align > 1 && ((io.offset() | io.length()) & (align - 1)) != 0) return IoStatus.INVALID;
        if (io.isDataLater()) return op == IoOp.WRITE && io.data() == null ? IoStatus.OK : IoStatus.INVALID;
        if (op.carriesData()) {
            // A read may come without a buffer when it offers views to a backend that always shares.
            if (io.data() == null) return op == IoOp.READ && io.views() != null ? IoStatus.OK : IoStatus.INVALID;
            if (io.data().remaining() != io.length()) return IoStatus.INVALID;
            if (op != IoOp.COMPARE && !op.modifiesMedia() && io.data().isReadOnly()) return IoStatus.INVALID;
        }
        return IoStatus.OK;
    }
}
