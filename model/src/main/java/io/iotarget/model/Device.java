package io.iotarget.model;

import java.util.Objects;

/**
 * A block device as every layer sees it: its identity ({@link #number()} and {@link #name()}),
 * its geometry, and a dense {@link #index()} that lets per-device state live in arrays.
 * Everything but the size is fixed; the size changes only when the engine revalidates it (nvmet's
 * {@code revalidate_size}: the backend grew, or shrank while nothing used it). Any thread; each
 * device is one object for as long as it is registered, and equal only to itself.
 */
public final class Device {
    private final int index;
    private final DeviceNumber number;
    private final String name;
    private final int logicalBlockSize;
    private final boolean readOnly;
    private final int ioAlignment;
    /** Written by the engine's revalidation only; read on every request's bounds check. */
    private volatile long sizeBytes;

    /**
     * @param index            dense, 0-based, unique among the devices of one engine
     * @param number           MAJ:MIN, the key of io.max / io.stat lines
     * @param name             backend name, accepted wherever MAJ:MIN is
     * @param sizeBytes        capacity
     * @param logicalBlockSize smallest addressable unit in bytes (512 or 4096)
     * @param readOnly         writes, discards and write-zeroes are refused with {@link IoStatus#READ_ONLY}
     * @param ioAlignment      offsets and lengths must be multiples of this: 1 when any byte range
     *                         works, the logical block size when the backend needs aligned IO (O_DIRECT)
     */
    public Device(int index, DeviceNumber number, String name, long sizeBytes, int logicalBlockSize, boolean readOnly, int ioAlignment) {
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
        this.index = index;
        this.number = number;
        this.name = name;
        this.sizeBytes = sizeBytes;
        this.logicalBlockSize = logicalBlockSize;
        this.readOnly = readOnly;
        this.ioAlignment = ioAlignment;
    }

    public int index() {
        return index;
    }

    public DeviceNumber number() {
        return number;
    }

    public String name() {
        return name;
    }

    /** The capacity now. */
    public long sizeBytes() {
        return sizeBytes;
    }

    public int logicalBlockSize() {
        return logicalBlockSize;
    }

    public boolean readOnly() {
        return readOnly;
    }

    public int ioAlignment() {
        return ioAlignment;
    }

    /**
     * The engine's revalidation only: the backend now holds {@code sizeBytes}. Requests checked
     * before this call keep the bounds they were checked against.
     */
    public void resize(long sizeBytes) {
        if (sizeBytes < 0) throw new IllegalArgumentException("sizeBytes " + sizeBytes);
        this.sizeBytes = sizeBytes;
    }

    /** True when [offset, offset + length) lies inside the device. */
    public boolean contains(long offset, long length) {
        long size = sizeBytes;
        return offset >= 0 && length >= 0 && offset <= size && length <= size - offset;
    }

    @Override
    public String toString() {
        return "Device[" + name + " " + number + ", " + sizeBytes + " bytes]";
    }
}
