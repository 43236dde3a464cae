/**
 * Test support shared by the modules whose tests drive real clients: {@link
 * io.iotarget.testkit.Tools} runs host tools (qemu-img, nbdinfo, fio...), {@link
 * io.iotarget.testkit.GuestVm} boots the shared Linux guest with a script, and {@link
 * io.iotarget.testkit.Prerequisites} is the one rule for what a test needs from its machine
 * (skipped on a developer's, failed under CI=true). Test scope only.
 */
package io.iotarget.testkit;
