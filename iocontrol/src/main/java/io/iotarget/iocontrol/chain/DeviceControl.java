package io.iotarget.iocontrol.chain;

import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.model.Device;
import io.iotarget.model.IoRequest;

import java.util.ArrayDeque;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The chain's state for one device, the analogue of a request queue's rq_qos list and root
 * blkg: the policy chain instantiated for this device, the lock their hooks run under, and the
 * requests they released that still have to be handed to dispatch. Made by
 * {@link PolicyChain#attach}, kept in the {@link DeviceRegistry}.
 */
public final class DeviceControl implements PolicyDevice {
    /** Queue depth of a device registered without one: the engine's default. */
    public static final int DEFAULT_QUEUE_DEPTH = 256;

    private final Device device;
    private final int queueDepth;
    final ReentrantLock lock = new ReentrantLock();
    final DevicePolicy[] policies;
    final Resumer[] resumers;
    /** Requests that have passed the whole chain after waiting; drained when a locked section ends. */
    final ArrayDeque<IoRequest> ready = new ArrayDeque<>();
    /** The time of the locked section in progress, for resumers; never goes back. Device lock. */
    long lockedNowNs = Long.MIN_VALUE;
    /** {@link #nextWakeNs} when the locked section in progress began. Device lock. */
    long wakeAtEntryNs;
    /** When some policy next needs {@code releaseDue}; Long.MAX_VALUE when nothing waits. */
    volatile long nextWakeNs = Long.MAX_VALUE;
    /** Requests sit in {@link #ready} and no caller is about to drain them. */
    volatile boolean readyPending;
    volatile boolean removed;
    /** Stage bits of the policies whose issue/complete hooks do something: others cost no lock. */
    int trackingStages;
    ChargedPair root;

    DeviceControl(Device device, int queueDepth, int policyCount) {
        this.device = device;
        this.queueDepth = queueDepth;
        this.policies = new DevicePolicy[policyCount];
        this.resumers = new Resumer[policyCount];
    }

    /**
     * The device a policy hands back as a {@link PolicyDevice}: the policies name devices only by
     * that interface, and this class is its only implementation, so this one place turns it
     * back (a type check, no allocation). Any thread.
     */
    public static DeviceControl of(PolicyDevice device) {
        return (DeviceControl) device;
    }

    @Override
    public Device device() {
        return device;
    }

    /** Requests the device's dispatch queue runs at once: the kernel's {@code nr_requests}, which io.latency scales by. */
    public int queueDepth() {
        return queueDepth;
    }

    /** The root group's state on this device (whole-device io.stat). */
    @Override
    public ChargedPair root() {
        return root;
    }

    /** The instance of the policy at {@code index} on this device. */
    @Override
    public DevicePolicy policy(int index) {
        return policies[index];
    }

    /** How many policies the chain runs on this device. */
    public int policyCount() {
        return policies.length;
    }

    /** The device is being or has been unregistered: no new state may be made on it. */
    public boolean removed() {
        return removed;
    }

    @Override
    public String toString() {
        return device.name() + "(" + device.number() + ")";
    }
}
