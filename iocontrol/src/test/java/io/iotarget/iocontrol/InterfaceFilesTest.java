package io.iotarget.iocontrol;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The interface files' formats, write syntax and errors, as cgroup-v2's io controller has them. */
class InterfaceFilesTest {
    private final ControllerHarness h = new ControllerHarness();

    private Errno errno(String path, String value) {
        return assertThrows(ControlException.class, () -> h.controller.write(path, value)).errno();
    }

    @Test
    void shouldReadAndWriteIoMaxLikeTheKernel() throws Exception {
        h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 rbps=2097152 wiops=120");
        assertEquals("259:0 rbps=2097152 wbps=max riops=max wiops=120\n", h.controller.read("tenants/a/io.max"));
        h.controller.write("tenants/a/io.max", "259:0 wiops=max");
        assertEquals("259:0 rbps=2097152 wbps=max riops=max wiops=max\n", h.controller.read("tenants/a/io.max"));
        h.controller.write("tenants/a/io.max", "mem1 riops=99999999999");       // a device name works; iops clamp to max
        assertEquals("259:0 rbps=2097152 wbps=max riops=max wiops=max\n", h.controller.read("tenants/a/io.max"));
        h.controller.write("tenants/a/io.max", "  259:1\twbps=18446744073709551614\n");
        assertEquals("259:0 rbps=2097152 wbps=max riops=max wiops=max\n259:1 rbps=max wbps=18446744073709551614 riops=max wiops=max\n",
                h.controller.read("tenants/a/io.max"));
        h.controller.write("tenants/a/io.max", "259:0 rbps=max wbps=max riops=max wiops=max");
        h.controller.write("tenants/a/io.max", "259:1 wbps=max");
        assertEquals("", h.controller.read("tenants/a/io.max"));
    }

    @ParameterizedTest(name = "io.max \"{0}\" -> {1}")
    @CsvSource(delimiter = '|', value = {
            "259:0 wbps=0|ERANGE",
            "259:0 foo=0|ERANGE",                     // the kernel checks the value before the key
            "259:0 rbps=-5|EINVAL",
            "259:0 rbps=18446744073709551616|ERANGE", // 2^64 wraps to 0 in the kernel: ERANGE there too
            "259:0 rbps=18446744073709551626|EINVAL", // the kernel would take it as 10: refused
            "259:0 rbps=12abc|EINVAL",
            "259:0 rbps=1|EINVAL",                    // Linux 6.1 takes no limit of 1
            "259:0 rbps=0x10|ERANGE",                 // decimal: the kernel reads 0
            "259:0 rbps=|EINVAL",
            "259:0 rbps|EINVAL",
            "259:0 rbpz=5|EINVAL",
            "259:0rbps=1|EINVAL",
            "259:9 rbps=1|ENODEV",
            "8:16 rbps=1|ENODEV",
            "nosuchdisk rbps=1|EINVAL",
            "x:y rbps=1|EINVAL",
            "259:0 riops=100000000000000000000000000|EINVAL",
            "garbage|EINVAL",
    })
    void shouldRefuseBadIoMaxWritesAndChangeNothing(String value, Errno expected) throws Exception {
        h.group("a");
        h.controller.write("a/io.max", "259:0 rbps=1000 wiops=7");
        String before = h.controller.read("a/io.max");
        assertEquals(expected, errno("a/io.max", value));
        assertEquals(before, h.controller.read("a/io.max"));
    }

    @Test
    void shouldApplyAnIoMaxLineWholeOrNotAtAll() throws Exception {
        h.group("a");
        assertEquals(Errno.EINVAL, errno("a/io.max", "259:0 rbps=5 wbps=oops"));
        assertEquals("", h.controller.read("a/io.max"));
    }

    @Test
    void shouldReadAndWriteIoWeight() throws Exception {
        h.group("a");
        assertEquals("default 100\n", h.controller.read("a/io.weight"));
        // As the kernel's blkg_conf_prep: a per-device weight needs iocost set up on the device.
        assertEquals(Errno.EOPNOTSUPP, errno("a/io.weight", "259:1 200"));
        h.controller.write("io.cost.qos", "259:1 enable=0");
        h.controller.write("a/io.weight", "259:1 200");
        assertEquals("default 100\n259:1 200\n", h.controller.read("a/io.weight"));
        h.controller.write("a/io.weight", "50");
        h.controller.write("a/io.weight", "259:1 default");
        assertEquals("default 50\n", h.controller.read("a/io.weight"));
        h.controller.write("a/io.weight", "default 10000");
        assertEquals("default 10000\n", h.controller.read("a/io.weight"));
        for (String bad : List.of("0", "10001", "-1", "default", "default x", "abc", "259:1 0", "259:1 10001", "259:1 x", "259:1", "99999999999")) {
            assertEquals(Errno.EINVAL, errno("a/io.weight", bad), bad);
        }
        assertEquals(Errno.ENODEV, errno("a/io.weight", "259:7 100"));
        assertEquals("default 10000\n", h.controller.read("a/io.weight"));
    }

    @Test
    void shouldKeepIoFilesBehindSubtreeControl() throws Exception {
        assertEquals("io\n", h.controller.read("cgroup.controllers"));
        assertEquals("io\n", h.controller.read("cgroup.subtree_control"), "the root starts with io enabled, like a systemd host");
        h.controller.mkdir("t");
        h.controller.mkdir("t/a");
        assertEquals("io\n", h.controller.read("t/cgroup.controllers"));
        assertEquals("", h.controller.read("t/cgroup.subtree_control"));
        assertEquals("", h.controller.read("t/a/cgroup.controllers"));
        ControlException e = assertThrows(ControlException.class, () -> h.controller.read("t/a/io.max"));
        assertEquals(Errno.ENOENT, e.errno());
        assertEquals(true, e.detail().contains("write +io to t/cgroup.subtree_control"), e.detail());
        assertEquals(Errno.ENOENT, errno("t/a/cgroup.subtree_control", "+io"), "io not available to t/a yet");
        h.controller.write("t/cgroup.subtree_control", "+io");
        h.controller.write("t/a/io.max", "259:0 riops=5");
        h.controller.write("t/a/cgroup.subtree_control", "+io");
        assertEquals(Errno.EBUSY, errno("t/cgroup.subtree_control", "-io"), "t/a still has io enabled");
        assertEquals(Errno.EINVAL, errno("t/cgroup.subtree_control", "+cpu"));
        assertEquals(Errno.EINVAL, errno("t/cgroup.subtree_control", "io"));
        h.controller.write("t/a/cgroup.subtree_control", "-io");
        h.controller.write("t/cgroup.subtree_control", "-io");
        h.controller.write("t/cgroup.subtree_control", "+io");
        assertEquals("", h.controller.read("t/a/io.max"), "disabling io discarded t/a's settings");
    }

    @Test
    void shouldManageTheTreeWithTheKernelsErrors() throws Exception {
        h.controller.mkdir("a");
        assertEquals(Errno.EEXIST, assertThrows(ControlException.class, () -> h.controller.mkdir("a")).errno());
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> h.controller.mkdir("x/y")).errno());
        assertEquals(Errno.EEXIST, assertThrows(ControlException.class, () -> h.controller.mkdir("io.max")).errno());
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> h.controller.mkdir("a b")).errno());
        assertEquals(Errno.ENOTDIR, assertThrows(ControlException.class, () -> h.controller.mkdir("io.stat/x")).errno());
        h.controller.mkdir("a/b");
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> h.controller.rmdir("a")).errno());
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> h.controller.rmdir("/")).errno());
        Group b = h.controller.group("a/b");
        h.controller.bind(b);
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> h.controller.rmdir("a/b")).errno());
        assertEquals("populated 1\nfrozen 0\n", h.controller.read("a/cgroup.events"));
        h.controller.unbind(b);
        h.controller.rmdir("a/b");
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> h.controller.rmdir("a/b")).errno());
        assertEquals(List.of("a/", "cgroup.controllers", "cgroup.subtree_control", "cgroup.stat", "cgroup.max.descendants",
                "cgroup.max.depth", "io.stat", "io.pressure", "iotarget.io.stat", "io.max.per_host", "io.cost.qos", "io.cost.model"), h.controller.list("/"));
        // As Linux answers root: cgroup_file_write finds no write handler (kernfs' 0444 does not stop root).
        assertEquals(Errno.EINVAL, errno("io.stat", "x"));
        assertEquals(Errno.EINVAL, errno("iotarget.io.stat", "x"));
        assertEquals(Errno.E2BIG, errno("io.stat", "x".repeat(4097)), "kernfs' size check comes first");
        h.controller.write("io.stat", "");  // an empty write reaches no file
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> h.controller.read("io.max")).errno());
    }

    @Test
    void shouldEnforceDescendantAndDepthLimits() throws Exception {
        h.controller.mkdir("a");
        h.controller.write("a/cgroup.max.descendants", "1");
        h.controller.write("a/cgroup.max.depth", "1");
        h.controller.mkdir("a/b");
        assertEquals(Errno.EAGAIN, assertThrows(ControlException.class, () -> h.controller.mkdir("a/c")).errno());
        assertEquals(Errno.EAGAIN, assertThrows(ControlException.class, () -> h.controller.mkdir("a/b/c")).errno());
        assertEquals(Errno.ERANGE, errno("a/cgroup.max.depth", "-1"));
        assertEquals(Errno.EINVAL, errno("a/cgroup.max.depth", "many"));
        assertEquals("1\n", h.controller.read("a/cgroup.max.depth"));
        h.controller.write("a/cgroup.max.descendants", "max");
        assertEquals("max\n", h.controller.read("a/cgroup.max.descendants"));
        assertEquals("nr_descendants 2\nnr_dying_descendants 0\n", h.controller.read("cgroup.stat"));
    }
}
