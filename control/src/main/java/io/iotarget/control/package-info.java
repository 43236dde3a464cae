/**
 * The control plane, on top of everything: one tree of configuration made of mounted
 * {@link io.iotarget.model.ConfigTree}s, and three ways to drive it that all end in the same
 * calls — the CLI ({@link io.iotarget.control.Main}), the HTTP endpoint
 * ({@link io.iotarget.control.http.ControlEndpoint}) and the JSON config file
 * ({@link io.iotarget.control.config.ConfigLoader}).
 *
 * <pre>
 *  tenants/a/io.max               the group tree (cgroupfs); relative paths land here
 *  /cgroup/tenants/a/io.max       the same file, absolute
 *  /backends/default/size         backends: null, memory, file (the engine's devices)
 *  /nbd/exports/default/cgroup    NBD exports
 *  /nvmet/subsystems/NQN/...      the NVMe target, laid out like /sys/kernel/config/nvmet
 * </pre>
 *
 * Every tree is built from the toolkit of {@code io.iotarget.model.tree} (paths, attribute
 * tables, kstrtobool / kstrtou64, the {@code cgroup}/{@code cgroup_id} binding), so the same
 * attribute, spelled the same way, means the same in every tree.
 */
package io.iotarget.control;
