package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.IoGroup;

import java.util.function.Function;

/**
 * The group a member — an NBD export, an NVMe namespace — is charged to, as two attributes
 * over one binding, alike in every tree:
 *
 * <pre>
 *  cgroup_id   nvmet's name (the cgroup_id patch): a group id as kstrtou64 reads it; 0 unbinds
 *  cgroup      iotarget's: the group's path, as the cgroup tree resolves it; "" unbinds
 * </pre>
 *
 * Writing either sets both. An unbound member (the default) reads {@code 0} and {@code ""} and
 * is charged to the root group; {@code cgroup /} binds the root itself and reads {@code 1} and
 * {@code /}. A save keeps the binding as {@code cgroup} only: a group's id is not the same
 * after a restart, its path is. A number that is not one is EINVAL, an id or path no group has ENOENT; then the
 * owner's {@link Binder} may refuse the change (EBUSY while the member is enabled).
 */
public final class GroupBinding {
    public static final String CGROUP = "cgroup";
    public static final String CGROUP_ID = "cgroup_id";

    private GroupBinding() {
    }

    /** How groups are found: the controller's lookups. */
    public interface Groups<G extends IoGroup> {
        /** The online group with this id, or null. */
        G byId(long id);

        /** The group at {@code path}; ENOENT (or EINVAL for a bad path) otherwise. */
        G byPath(String path) throws ControlException;
    }

    /** Stores a binding; {@code group} is null to unbind. {@code write} ({@code "cgroup_id=5"}) is for refusals. */
    @FunctionalInterface
    public interface Binder<T, G> {
        void bind(T owner, G group, String write) throws ControlException;
    }

    /** {@code cgroup_id}: the binding by group id. */
    public static <T, G extends IoGroup> Attribute<T> cgroupId(Groups<G> groups, Function<T, G> bound, Binder<T, G> binder) {
        return Attribute.<T>number(CGROUP_ID, owner -> bound.apply(owner) == null ? 0 : bound.apply(owner).id(), (owner, id) -> {
            G group = id == 0 ? null : groups.byId(id);
            if (id != 0 && group == null) {
                throw new ControlException(Errno.ENOENT, CGROUP_ID + "=" + Long.toUnsignedString(id)
                                                         + " (expected: the id of an existing group, 0 to unbind)");
            }
            binder.bind(owner, group, CGROUP_ID + "=" + Long.toUnsignedString(id));
        }).replayedAs(Attribute::nothing);
    }

    /** {@code cgroup}: the binding by group path. */
    public static <T, G extends IoGroup> Attribute<T> cgroup(Groups<G> groups, Function<T, G> bound, Binder<T, G> binder) {
        return Attribute.text(CGROUP, owner -> bound.apply(owner) == null ? "" : bound.apply(owner).path(), (owner, value) -> {
            String path = KernelParse.strip(value);
            G group;
            try {
                group = path.isEmpty() ? null : groups.byPath(path);
            } catch (ControlException e) {
                throw new ControlException(e.errno(), CGROUP + "=" + path + " (expected: the path of an existing group, \"\" to unbind): "
                                                      + e.detail());
            }
            binder.bind(owner, group, CGROUP + "=" + path);
        });
    }
}
