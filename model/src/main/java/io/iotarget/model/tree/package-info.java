/**
 * What every configuration tree ({@link io.iotarget.model.ConfigTree}) is built from, so that
 * the cgroup, backend, NBD and nvmet trees speak one dialect:
 *
 * <ol>
 *   <li>{@link io.iotarget.model.tree.TreePath}: one way to split a path ({@code ..} refused);</li>
 *   <li>{@link io.iotarget.model.tree.Attribute} and {@link io.iotarget.model.tree.Attributes}:
 *       declarative tables of a directory's files, typed as flags, numbers or text, reading
 *       with a trailing newline as configfs does;</li>
 *   <li>{@link io.iotarget.model.tree.KernelParse}: the kernel's text parsing — kstrtobool,
 *       kstrtou64 and base-0 numbers, sscanf's tokens — and the one refusal text,
 *       {@code "what=value (expected: ...)"};</li>
 *   <li>{@link io.iotarget.model.tree.GroupBinding}: the {@code cgroup} / {@code cgroup_id}
 *       pair that binds an export or a namespace to the group that pays.</li>
 * </ol>
 *
 * So {@code enable=y} enables a backend, an export and a namespace alike, and
 * {@code cgroup_id=0} unbinds an export as it unbinds a namespace. Each tree keeps its own
 * node resolution (its directories are its own) and its lock.
 */
package io.iotarget.model.tree;
