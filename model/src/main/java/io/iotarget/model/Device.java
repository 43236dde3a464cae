package io.iotarget.model;

import java.util.Objects;

/**
 * A block device as every layer sees it: its identity ({@link #number()} and {@link #name()}),
 * its geometry, and a dense {@link #index()} that lets per-device state live in arrays.
 * Immutable; any thread.
 *
 * @param index            dense, 0-based, unique among the devices of one engine
 * @param number           MAJ:MIN, the key of io.max / io.stat lines
 * @param name             backend name, accepted wherever MAJ:MIN is
 * @param sizeBytes        capacity
 * @param logicalBlockSize smallest addressable unit in bytes (512 or 4096)
 * @param readOnly         writes, discards and write-zeroes are refused with {@link IoStatus#READ_ONLY}
 * @param ioAlignment      offsets and lengths must be multiples of this: 1 when any byte range
 *                         works, the logical block size when the backend needs aligned IO (O_DIRECT)
 */
public record Device(int index, DeviceNumber number, String name, long sizeBytes, int logicalBlockSize, boolean readOnly,
                     int ioAlignment) {
    public Device {
        Objects.requireNonNull(number, "number");
        Objects.requireNonNull(name, "name");
        if (index < 0) throw new IllegalArgumentException("index " + index);
        if (sizeBytes < 0) throw new IllegalArgumentException("sizeBytes " + sizeBytes);
        if (logicalBlockSize != 512 && logicalBlockSize != 4096) {
            throw new IllegalArgumentException("logicalBlockSize " + logicalBlockSize + " (expected: 512 or 4096)");
        }
        if (ioAlignment != 1 && ioAlignment != logicalBlockSize) {
            throw new IllegalArgumentException("ioAlignment " + ioAlignment + " (expected: 1 or " + logicalBlockSize + ")");
        }
    }

    /** True when [offset, offset + length) lies inside the device. */
    public boolean contains(long offset, long length) {
        return offset >= 0 && length >= 0 && offset <= sizeBytes && length <= sizeBytes - offset;
    }
}
