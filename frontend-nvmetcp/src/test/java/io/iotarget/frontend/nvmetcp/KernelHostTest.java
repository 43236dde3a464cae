package io.iotarget.frontend.nvmetcp;

import io.iotarget.iocontrol.Group;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The Linux kernel's NVMe/TCP host (nvme-tcp + nvme-cli 2.3 on Debian's 6.1 kernel, booted in
 * QEMU by the shared VM harness) against the target: the judge nobody here wrote. Runs only
 * with {@code -Diotarget.vm=true}; each test is one guest boot.
 */
class KernelHostTest {
    static final String RESTRICTED_NQN = "nqn.2026-11.io.iotarget:restricted";
    static final String ALLOWED_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";

    /** Discover, connect (plain, digests, no SQ flow control), identify, fio, read-back, refusal, passthrough charges, AEN, disconnect. */
    @Test
    void linuxHostRunsEverythingAgainstTheTarget() throws Exception {
        assumeTrue(GuestVm.enabled(), "VM tests run with -Diotarget.vm=true");
        try (TargetFixture f = new TargetFixture(); ControlServer control = new ControlServer(f.engine, f.target)) {
            var cg = f.engine.controller();
            cg.write("cgroup.subtree_control", "+io");
            cg.mkdir("tenants");
            cg.write("tenants/cgroup.subtree_control", "+io");
            Group tenant = cg.mkdir("tenants/a");
            String ns1 = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
            f.tree.write(ns1 + "/enable", "0");
            f.tree.write(ns1 + "/cgroup_id", Long.toString(tenant.id()));
            f.tree.write(ns1 + "/enable", "1");

            String r = "subsystems/" + RESTRICTED_NQN;
            f.tree.mkdir(r);
            f.tree.mkdir("hosts/" + ALLOWED_HOSTNQN);
            f.tree.link("hosts/" + ALLOWED_HOSTNQN, r + "/allowed_hosts/" + ALLOWED_HOSTNQN);
            f.tree.mkdir(r + "/namespaces/1");
            f.tree.write(r + "/namespaces/1/device_path", "default");
            f.tree.write(r + "/namespaces/1/enable", "1");
            f.tree.link(r, "ports/1/subsystems/" + RESTRICTED_NQN);

            GuestVm.Result result = GuestVm.run(GuestVm.scripts().resolve("kernel-host.sh"), Map.of(
                    "NQN", TargetFixture.NQN, "PORT", Integer.toString(f.port), "CTL_PORT", Integer.toString(control.port()),
                    "GROUP", "tenants/a", "RESTRICTED_NQN", RESTRICTED_NQN, "ALLOWED_HOSTNQN", ALLOWED_HOSTNQN), List.<Path>of(), 400);
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed);
            assertTrue(result.lines("CHECK").size() >= 30, "every step reported");
            assertEquals(0, result.exitCode(), result.text());
        }
    }
}
