package io.iotarget.frontend.nvmetcp;

import io.iotarget.testkit.GuestVm;
import io.iotarget.iocontrol.Group;
import org.junit.jupiter.api.Test;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Linux kernel's NVMe/TCP host (nvme-tcp + nvme-cli 2.3, booted in QEMU by the shared VM
 * harness) against the target: the judge nobody here wrote. Debian 12's stock 6.1 kernel, except
 * for DH-HMAC-CHAP, which needs the 6.12 guest ({@link GuestVm.Kernel#DEBIAN_6_12}). Runs when
 * the harness is there (see {@link GuestVm#enabled}); each test is one guest boot.
 */
class KernelHostTest {
    static final String RESTRICTED_NQN = "nqn.2026-11.io.iotarget:restricted";
    static final String ALLOWED_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";

    /** Discover, connect (plain, digests, no SQ flow control), identify, fio, read-back, refusal, passthrough charges, AEN, disconnect. */
    @Test
    void linuxHostRunsEverythingAgainstTheTarget() throws Exception {
        GuestVm.require();
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

            GuestVm.Result result = GuestVm.run(GuestVm.script("kernel-host.sh"), Map.of(
                    "NQN", TargetFixture.NQN, "PORT", Integer.toString(f.port), "CTL_PORT", Integer.toString(control.port()),
                    "GROUP", "tenants/a", "RESTRICTED_NQN", RESTRICTED_NQN, "ALLOWED_HOSTNQN", ALLOWED_HOSTNQN), List.<Path>of(), 400);
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed);
            assertTrue(result.lines("CHECK").size() >= 30, "every step reported");
            assertEquals(0, result.exitCode(), result.text());
        }
    }

    /**
     * ANA with the kernel host's native multipath (src/test/vm/ana-host.sh): each state written
     * to the port's group reaches the path's sysfs ana_state through the ANA change event, a read
     * issued while the path is inaccessible waits and completes once it is optimized again, and
     * the host never reconnects.
     */
    @Test
    void linuxHostFollowsTheAnaStateWithoutReconnecting() throws Exception {
        GuestVm.require();
        try (TargetFixture f = new TargetFixture(); ControlServer control = new ControlServer(f.engine, f.target)) {
            GuestVm.Result result = GuestVm.run(GuestVm.script("ana-host.sh"), Map.of(
                    "NQN", TargetFixture.NQN, "PORT", Integer.toString(f.port), "CTL_PORT", Integer.toString(control.port())),
                    List.<Path>of(), 300);
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed, result.text());
            assertEquals(12, result.lines("CHECK").size(), "every step reported: " + result.text());
            assertEquals(0, result.exitCode(), result.text());
        }
    }

    /**
     * Online resize with the kernel host (src/test/vm/resize-host.sh, issue 23 item 3): the memory
     * backend grows from 64 to 128 MiB while the host is connected; the Namespace Attribute
     * Changed event makes the host's block device grow without a reconnect, IO reaches past the
     * old end, data before it is intact, and a shrink while in use is refused.
     */
    @Test
    void linuxHostSeesItsNamespaceGrowWithoutReconnecting() throws Exception {
        GuestVm.require();
        try (TargetFixture f = new TargetFixture(); ControlServer control = new ControlServer(f.engine, f.target)) {
            GuestVm.Result result = GuestVm.run(GuestVm.script("resize-host.sh"), Map.of(
                    "NQN", TargetFixture.NQN, "PORT", Integer.toString(f.port), "CTL_PORT", Integer.toString(control.port())),
                    List.<Path>of(), 300);
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed, result.text());
            assertEquals(7, result.lines("CHECK").size(), "every step reported: " + result.text());
            assertEquals(0, result.exitCode(), result.text());
            assertEquals(128L << 20, f.engine.device("default").sizeBytes());
        }
    }

    /**
     * DH-HMAC-CHAP with the kernel host (src/test/vm/auth-host.sh), on the 6.12 guest whose host
     * driver can authenticate (Debian's 6.1 cannot): the right key in every transform and hash,
     * both directions in every DH group; a wrong host key, a wrong controller key and no key are
     * refused; an allowed host without a key connects; re-authentication with a rotated key; and
     * while the owner is connected, a host claiming its NQN with no key or the rotated-out key
     * gets nothing and harms nothing, nor do IO queues that a Java client without the key adds to
     * the owner's controller (issue 19). One boot runs it all.
     */
    @Test
    void linuxHostAuthenticatesWithDhHmacChap() throws Exception {
        GuestVm.require();
        try (TargetFixture f = new TargetFixture(); ControlServer control = new ControlServer(f.engine, f.target)) {
            String s = "subsystems/" + AuthenticationProtocolTest.SECURE;
            f.tree.mkdir(s);
            f.tree.mkdir(s + "/namespaces/1");
            f.tree.write(s + "/namespaces/1/device_path", "default");
            f.tree.write(s + "/namespaces/1/enable", "1");
            for (String h : new String[]{AuthenticationProtocolTest.KEYED, AuthenticationProtocolTest.KEYLESS}) {
                f.tree.mkdir("hosts/" + h);
                f.tree.link("hosts/" + h, s + "/allowed_hosts/" + h);
            }
            f.tree.write("hosts/" + AuthenticationProtocolTest.KEYED + "/dhchap_key", io.iotarget.frontend.nvmetcp.auth.TestChapHost.newSecret(1, 32));
            f.tree.link(s, "ports/1/subsystems/" + AuthenticationProtocolTest.SECURE);

            GuestVm.Result result = GuestVm.run(GuestVm.Kernel.DEBIAN_6_12, GuestVm.script("auth-host.sh"), Map.of(
                    "PORT", Integer.toString(f.port), "CTL_PORT", Integer.toString(control.port()),
                    "SECURE_NQN", AuthenticationProtocolTest.SECURE, "KEYED_NQN", AuthenticationProtocolTest.KEYED,
                    "KEYLESS_NQN", AuthenticationProtocolTest.KEYLESS), List.<Path>of(), 600);
            System.out.println("target: keep_alive_expired=" + f.target.counters().counter(NvmeTcpCounter.KEEP_ALIVE_EXPIRED)
                               + " authentication_failures=" + f.target.counters().counter(NvmeTcpCounter.AUTHENTICATION_FAILURES));
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed);
            List<String> scenario = new ArrayList<>(List.of("no-key-refused", "keyless-host-connects", "right-key",
                    "every-queue-authenticated", "wrong-key-refused", "wrong-ctrl-key-refused", "reauthenticated",
                    "spoofed-nqn-no-key-refused", "spoofed-nqn-old-key-refused", "owner-unharmed",
                    "hijack-other-hostid-refused", "hijack-out-of-sequence-closes-own-queue", "hijack-silent-closes-own-queue",
                    "owner-unharmed-by-hijack"));
            for (String hash : List.of("sha256", "sha384", "sha512")) scenario.add("negotiated-hmac(" + hash + ")");
            for (String group : List.of("null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192")) {
                scenario.add("bidirectional-" + group);
                scenario.add("controller-authenticated-" + group);
            }
            List<String> missing = scenario.stream().filter(label -> result.lines("CHECK " + label + " ok").isEmpty()).toList();
            assertEquals(List.of(), missing, "steps that did not report ok:\n" + result.text());
            assertEquals(0, result.exitCode(), result.text());
            assertEquals(0, f.target.counters().counter(NvmeTcpCounter.KEEP_ALIVE_EXPIRED), "no controller lost to keep-alive while authenticating");
        }
    }

    /**
     * Seed 001 end to end: a memory-backed and a file-backed namespace in two subsystems, each
     * bound by cgroup_id to its own group with io.max; the limits bite and io.stat matches what
     * the host moved. The same guest then runs the stock kernel nvmet, which charges the tenant
     * nothing.
     */
    @Test
    void seed001LimitsBiteAndIoStatMatchesTheHost() throws Exception {
        GuestVm.require();
        Path image = Path.of("target", "seed001-ns.img").toAbsolutePath();
        Files.createDirectories(image.getParent());
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(256L << 20);
        }
        try (TargetFixture f = new TargetFixture(); ControlServer control = new ControlServer(f.engine, f.target)) {
            var cg = f.engine.controller();
            cg.write("cgroup.subtree_control", "+io");
            Group memGroup = cg.mkdir("nvmet-mem");
            Group fileGroup = cg.mkdir("nvmet-file");
            String mem = "nqn.2026-09.io.test01:mem", file = "nqn.2026-09.io.test01:file";
            for (String[] ns : new String[][]{{mem, "default", Long.toString(memGroup.id())},
                                              {file, image.toString(), Long.toString(fileGroup.id())}}) {
                String s = "subsystems/" + ns[0];
                f.tree.mkdir(s);
                f.tree.mkdir(s + "/namespaces/1");
                f.tree.write(s + "/attr_allow_any_host", "1");
                f.tree.write(s + "/namespaces/1/device_path", ns[1]);
                f.tree.write(s + "/namespaces/1/cgroup_id", ns[2]);
                f.tree.write(s + "/namespaces/1/enable", "1");
                f.tree.link(s, "ports/1/subsystems/" + ns[0]);
            }
            String memDev = f.engine.device("default").number().toString();
            String fileDev = f.engine.device(image.toString()).number().toString();
            GuestVm.Result result = GuestVm.run(GuestVm.script("seed-001.sh"), Map.ofEntries(
                    Map.entry("MEM_NQN", mem), Map.entry("FILE_NQN", file), Map.entry("PORT", Integer.toString(f.port)),
                    Map.entry("CTL_PORT", Integer.toString(control.port())), Map.entry("MEM_GROUP", "nvmet-mem"),
                    Map.entry("FILE_GROUP", "nvmet-file"), Map.entry("MEM_DEV", memDev), Map.entry("FILE_DEV", fileDev),
                    Map.entry("RIOPS", "150"), Map.entry("WBPS", "1048576"), Map.entry("FIO_RUNTIME", "3")),
                    List.of(GuestVm.harness().resolve("examples/kernel-nvmet-iomax.sh")), 400);
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed);
            assertEquals(0, result.exitCode(), result.text());
            assertTrue(cg.read("nvmet-mem/io.stat").startsWith(memDev + " rbytes="), cg.read("nvmet-mem/io.stat"));
            assertTrue(cg.read("nvmet-file/io.stat").startsWith(fileDev + " rbytes="), cg.read("nvmet-file/io.stat"));
        } finally {
            Files.deleteIfExists(image);
        }
    }

    /**
     * cgroup_per_host with the kernel host (src/test/vm/per-host.sh): the namespace is bound to
     * {@code tenant} with io.max.per_host; the host's IO is charged to the child of tenant named
     * by the host NQN the kernel connected with, which starts with io.max.per_host and keeps its
     * io.stat after the host disconnected; tenant's io.stat is the child's.
     */
    @Test
    void linuxHostGetsItsOwnGroupNamedByItsNqn() throws Exception {
        GuestVm.require();
        try (TargetFixture f = new TargetFixture()) {
            var cg = f.engine.controller();
            String dev = f.engine.device("default").number().toString();
            cg.mkdir("tenant");
            String ns = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
            f.tree.write(ns + "/enable", "0");
            f.tree.write(ns + "/cgroup", "tenant");
            f.tree.write(ns + "/cgroup_per_host", "1");
            f.tree.write(ns + "/enable", "1");
            cg.write("tenant/io.max.per_host", dev + " rbps=104857600");
            GuestVm.Result result = GuestVm.run(GuestVm.script("per-host.sh"), Map.of("NQN", TargetFixture.NQN, "PORT", Integer.toString(f.port)),
                                                List.<Path>of(), 300);
            List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
            assertEquals(List.of(), failed, result.text());
            assertEquals(0, result.exitCode(), result.text());
            List<String> hostNqn = result.lines("HOSTNQN ");
            assertEquals(1, hostNqn.size(), result.text());
            String child = "tenant/nqn:" + hostNqn.getFirst().substring("HOSTNQN ".length()).strip();
            assertEquals(dev + " rbps=104857600 wbps=max riops=max wiops=max\n", cg.read(child + "/io.max"), "started with io.max.per_host");
            String childStat = cg.read(child + "/io.stat");
            long rbytes = Long.parseLong(childStat.replaceAll("(?s).*rbytes=(\\d+).*", "$1"));
            assertTrue(rbytes >= 1 << 20, "the host's 1 MiB read (and its partition scan) in its own group: " + childStat);
            assertEquals(childStat, cg.read("tenant/io.stat"), "the only host: tenant's io.stat is its child's");
        }
    }
}
