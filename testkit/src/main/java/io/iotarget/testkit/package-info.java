/**
 * Test support shared by the modules whose tests drive real clients: {@link
 * io.iotarget.testkit.Tools} runs host tools (qemu-img, nbdinfo, fio...), {@link
 * io.iotarget.testkit.GuestVm} boots the shared Linux guest with a script. Test scope only.
 */
package io.iotarget.testkit;
