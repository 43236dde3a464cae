package io.iotarget.control.config;

import io.iotarget.control.config.ConfigLoader.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigLoaderTest {
    @TempDir
    Path dir;

    /** Two objects back to back (a merge gone wrong): the second must not be dropped in silence. */
    @Test
    void shouldRefuseAnythingAfterTheTopLevelObject() throws Exception {
        Path file = dir.resolve("config.json");
        Files.writeString(file, """
                { "backends": { "a": { "type": "null", "size": "1G", "enable": 1 } } }
                { "cgroup": { "tenants": {} } }
                """);
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.parse(file));
        assertTrue(e.getMessage().startsWith(file + ": not valid JSON: "), e.getMessage());
    }
}
