package io.iotarget.iocontrol.file;

import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.util.List;
import java.util.function.Function;

/**
 * One file of a group's directory, with the kernel's name, read format, write syntax and
 * errors (a cftype). The controller calls {@link #read} and {@link #write} under its tree
 * lock, so files see a tree that does not change under them; a write either applies
 * completely or throws and changes nothing (except that io.cost.qos and io.cost.model set
 * iocost up on the device they name before reading the rest, as the kernel does).
 */
public abstract class InterfaceFile {
    /** Where in the tree the file exists; HOST_GROUPS: in the groups hosts pay in under cgroup_per_host ({@link PolicyGroup#hostGroup}). */
    public enum Placement { EVERYWHERE, NOT_ON_ROOT, ONLY_ON_ROOT, HOST_GROUPS }

    private final String name;
    private final Placement placement;
    private final boolean controllerFile;

    /**
     * @param controllerFile true for a controller's files ({@code io.*}): they exist in a group
     *                       only when its parent has {@code io} in cgroup.subtree_control
     *                       (always on the root)
     */
    protected InterfaceFile(String name, Placement placement, boolean controllerFile) {
        this.name = name;
        this.placement = placement;
        this.controllerFile = controllerFile;
    }

    public final String name() {
        return name;
    }

    public final Placement placement() {
        return placement;
    }

    public abstract String read(PolicyGroup group) throws ControlException;

    /** Whether {@link #write} accepts anything (mode 0644 rather than 0444). */
    public boolean writable() {
        return false;
    }

    /**
     * Applies {@code text} (one write(2)). A read-only file refuses it with EINVAL, as Linux
     * answers root (whose write access kernfs' 0444 does not stop): cgroup_file_write finds no
     * write handler. The owner of the control endpoint is that root.
     */
    public void write(PolicyGroup group, String text) throws ControlException {
        throw new ControlException(Errno.EINVAL, name + " is read-only");
    }

    /**
     * What a save keeps: the writes that give a new group this file's value. For a writable
     * file, each line it reads, as one write each ({@code io.max}, {@code io.weight}: the
     * kernel's read format is its write syntax); nothing for a read-only file. A file whose
     * read is not its write syntax overrides this.
     */
    public List<String> replay(PolicyGroup group) throws ControlException {
        if (!writable()) return List.of();
        return read(group).lines().filter(line -> !line.isEmpty()).toList();
    }

    /**
     * The read of a file with a line per device (io.max, io.weight's overrides, ...): for each
     * device the group has state on, in device order, its MAJ:MIN, what {@code body} gives for
     * it (which starts with a space), and a newline; a device for which {@code body} gives null
     * has no line.
     */
    protected static String deviceLines(PolicyGroup group, Function<PolicyDeviceGroup, String> body) {
        return deviceLines(group, dg -> dg.device().device().number().toString(), body);
    }

    /** {@link #deviceLines(PolicyGroup, Function)} with each line keyed by what {@code key} gives (io.max.global: the backend's name). */
    protected static String deviceLines(PolicyGroup group, Function<PolicyDeviceGroup, String> key, Function<PolicyDeviceGroup, String> body) {
        StringBuilder sb = new StringBuilder();
        for (PolicyDeviceGroup dg : group.deviceGroups()) {
            String line = body.apply(dg);
            if (line != null) sb.append(key.apply(dg)).append(line).append('\n');
        }
        return sb.toString();
    }

    /** Whether this file appears in {@code group}'s directory. */
    public final boolean presentIn(PolicyGroup group) {
        boolean root = group.isRoot();
        return switch (placement) {
            case EVERYWHERE -> !controllerFile || group.ioEnabled();
            case NOT_ON_ROOT -> !root && (!controllerFile || group.ioEnabled());
            case ONLY_ON_ROOT -> root;
            case HOST_GROUPS -> group.hostGroup();
        };
    }
}
