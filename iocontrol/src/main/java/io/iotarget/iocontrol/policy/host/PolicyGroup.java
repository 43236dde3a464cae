package io.iotarget.iocontrol.policy.host;

import io.iotarget.model.IoGroup;

import java.util.List;

/**
 * A group of the tree as a policy sees it (the kernel's blkcg as blkcg_policy sees it): its
 * place in the tree, whether io is enabled in it, its state on each device, and the data its
 * policies keep for it. The controller's groups are the only implementation; a policy never
 * changes a group's shape through this.
 *
 * <p>Threads: the shape and the io flags change only under the controller's tree lock, which
 * the hooks that read them hold; {@link #deviceGroup} and {@link #deviceGroups} are lock-free
 * snapshots.
 */
public interface PolicyGroup extends IoGroup {
    /** The directory name; "" for the root. */
    String name();

    /** The parent group, or null for the root. */
    PolicyGroup parent();

    boolean isRoot();

    /** False once the group has been removed. */
    boolean online();

    /** The io controller is enabled here: this is the root, or the parent lists io in cgroup.subtree_control. */
    boolean ioEnabled();

    /** cgroup.subtree_control has io. */
    boolean ioInSubtree();

    /**
     * The group that pays for this group's IO, as the kernel's {@code cgroup_e_css}: the group
     * itself when io is enabled here and it is online, else the nearest such ancestor.
     */
    PolicyGroup effective();

    /** A snapshot of the children, by name. Tree lock. */
    List<? extends PolicyGroup> children();

    /** A host's group under cgroup_per_host: one of its connections has paid here since the server started. Tree lock. */
    boolean hostGroup();

    /** The group's state on the device at {@code deviceIndex}, or null if it has none there yet. Lock-free. */
    PolicyDeviceGroup deviceGroup(int deviceIndex);

    /** The group's state on every device it has state on, in device order. Lock-free snapshot. */
    List<? extends PolicyDeviceGroup> deviceGroups();

    /** What the policy at {@code policyIndex} keeps for this group on every device ({@code IoPolicy.newGroupData}). */
    Object policyData(int policyIndex);
}
