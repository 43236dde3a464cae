/**
 * io.weight (iocost). This step stores and echoes the configuration with the kernel's
 * formats and errors: a per-group default weight and per-device overrides, 1..10000,
 * default 100. The proportional-share algorithm (vtime, hweight, io.cost.qos, io.cost.model)
 * arrives with the cost policy proper; until then weights have no effect, as in the kernel
 * when iocost is not enabled on a device.
 */
package io.iotarget.iocontrol.policy.cost;
