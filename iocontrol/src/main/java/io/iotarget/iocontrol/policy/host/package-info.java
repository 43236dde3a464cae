/**
 * The controller as the policies see it, and all they see of it: {@link
 * io.iotarget.iocontrol.policy.host.PolicyHost} (the devices, a device by key, the root, a
 * walk of the groups, a configuration change), the groups ({@link
 * io.iotarget.iocontrol.policy.host.PolicyGroup}), the devices ({@link
 * io.iotarget.iocontrol.policy.host.PolicyDevice}) and each group's state on a device ({@link
 * io.iotarget.iocontrol.policy.host.PolicyDeviceGroup}). The controller's {@code Group},
 * {@code DeviceGroup} and {@code chain.DeviceControl} implement them.
 *
 * <p>A leaf: it names nothing else of iocontrol, so the policies ({@code policy},
 * {@code policy.*}) and the interface files ({@code file}) depend on it and not on the
 * controller that is built from them; the layers point one way: the controller and its chain
 * → the policies → the interface files → this package.
 */
package io.iotarget.iocontrol.policy.host;
