package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** iocost in a config file: the root's io.cost.* are written before the groups' per-device weights, wherever they are in the file. */
class IocostConfigTest {
    private final ObjectMapper json = new ObjectMapper();
    @TempDir
    Path tokens;

    @Test
    void shouldSetIocostUpBeforeTheGroupsThatWeighOnIt() throws Exception {
        try (Server server = Server.start(json.readTree("""
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "scratch": { "type": "null", "size": "1G", "device": "259:7", "enable": 1 } },
                  "cgroup": { "io.cost.model": "scratch rbps=1000000000 wbps=1000000000",
                              "io.cost.qos": "scratch enable=1 wpct=95 wlat=10000",
                              "tenants": { "cgroup.subtree_control": "+io",
                                           "a": { "io.weight": ["default 50", "scratch 300"] } } } }"""), tokens)) {
            var c = server.engine().controller();
            assertEquals("259:7 enable=1 ctrl=user rpct=0.00 rlat=25000 wpct=95.00 wlat=10000 min=1.00 max=10000.00\n", c.read("io.cost.qos"));
            assertEquals("default 50\n259:7 300\n", c.read("tenants/a/io.weight"));
        }
    }

    @Test
    void shouldRefuseAPerDeviceWeightWhereIocostIsNotSetUp() throws Exception {
        ConfigException e = assertThrows(ConfigException.class, () -> Server.start(json.readTree("""
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "scratch": { "type": "null", "size": "1G", "device": "259:7", "enable": 1 } },
                  "cgroup": { "a": { "io.weight": "scratch 300" } } }"""), tokens));
        assertEquals("cgroup.a.io.weight = \"scratch 300\": Operation not supported (EOPNOTSUPP): "
                     + "iocost is not set up on 259:7 (write io.cost.qos or io.cost.model for it first)", e.getMessage());
    }
}
