package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * docs/config.md names every key a config may hold (issue 18 item 10: nvmet's
 * {@code buffered_io} was missing). The keys come from the code, not from a list here: the
 * server and cluster settings and the sections from the loader's own refusal of an unknown
 * one, and every tree's attributes and fixed directories by walking the trees with one
 * directory of every kind made. A file that refuses any write as read-only (EACCES, or a cgroup file's EINVAL "is read-only") is not a
 * key; everything else is, and must appear in code spans of its own section of the document
 * ({@code ## nvmet} for nvmet's), as a word of its own: {@code `buffered_io`}, or
 * {@code `nbd/exports/NAME`} for {@code exports}. The sections' names may appear anywhere.
 */
class ConfigDocsTest {
    /** Surefire runs in the module's directory. */
    private static final Path DOC = Path.of("..", "docs", "config.md").toAbsolutePath().normalize();
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final String NQN = "nqn.2026-11.io.iotarget:every";
    /** The directories this test names itself: not keys, any name goes. */
    private static final Set<String> NAMED_HERE = Set.of("disk", "tenants", "a", "x", HOST, NQN, "1");

    @TempDir
    Path dir;

    @Test
    void shouldNameEveryKeyTheLoaderTakes() throws Exception {
        Map<String, Set<String>> keys = new TreeMap<>();
        keys.put("", new TreeSet<>(expected("{ \"unknown\": {} }", "unknown: unknown section (expected: ")));
        keys.put("server", new TreeSet<>(expected("{ \"server\": { \"unknown\": 1 } }", "server.unknown: unknown setting (expected: ")));
        keys.put("cluster", new TreeSet<>(expected("{ \"cluster\": { \"unknown\": 1 } }", "cluster.unknown: unknown setting (expected: ")));
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "disk": { "type": "memory", "size": "64M", "enable": 1 } },
                  "cgroup": { "cgroup.subtree_control": "+io", "tenants": { "cgroup.subtree_control": "+io", "a": {} } },
                  "nbd": { "exports": { "x": {} } },
                  "nvmet": { "hosts": { "%s": {} },
                             "subsystems": { "%s": { "namespaces": { "1": {} } } },
                             "ports": { "1": {} } } }
                """.formatted(HOST, NQN);
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            for (String mount : server.mounts().list("/")) {
                String section = mount.substring(0, mount.length() - 1);
                keys.put(section, new TreeSet<>());
                walk(server.mounts(), "/" + section, keys.get(section));
            }
        }
        String doc = Files.readString(DOC);
        Map<String, Set<String>> missing = new TreeMap<>();
        for (Map.Entry<String, Set<String>> section : keys.entrySet()) {
            Set<String> named = words(section.getKey().isEmpty() ? doc : section(doc, section.getKey()));
            for (String key : section.getValue()) if (!named.contains(key)) missing.computeIfAbsent(section.getKey(), k -> new TreeSet<>()).add(key);
        }
        assertEquals(Map.of(), missing, "keys the loader takes that " + DOC + " does not name in their section (\"\" = anywhere); all: " + keys);
    }

    /** From {@code ## name} to the next {@code ## }. */
    private static String section(String doc, String name) {
        Matcher m = Pattern.compile("(?ms)^## " + Pattern.quote(name) + "\\b.*?(?=^## |\\z)").matcher(doc);
        return m.find() ? m.group() : "";
    }

    /** The words of every code span: {@code `nbd/exports/NAME`} names nbd, exports and NAME. */
    private static Set<String> words(String text) {
        Set<String> words = new TreeSet<>();
        Matcher span = Pattern.compile("`([^`\\n]+)`").matcher(text);
        while (span.find()) words.addAll(List.of(span.group(1).split("[/\\s=:\",{}\\[\\]]+")));
        return words;
    }

    /** The names after {@code prefix} in the loader's refusal of {@code json}: its own table of what it takes. */
    private List<String> expected(String json, String prefix) throws Exception {
        ConfigException e = assertThrows(ConfigException.class, () -> Server.start(new ObjectMapper().readTree(json), dir));
        String message = e.getMessage();
        assertEquals(prefix, message.substring(0, Math.min(prefix.length(), message.length())), message);
        return List.of(message.substring(prefix.length(), message.lastIndexOf(')')).split(", "));
    }

    /** Every writable attribute's name, and every directory's the tree made itself, below {@code dir}. */
    private static void walk(ConfigTree root, String dir, Set<String> keys) throws ControlException {
        for (String entry : root.list(dir)) {
            String name = entry.endsWith("/") ? entry.substring(0, entry.length() - 1) : entry;
            String path = (dir.endsWith("/") ? dir : dir + "/") + name;
            boolean top = dir.equals("/");                          // the mount points: cgroup, backends, nbd, nvmet
            switch (root.kind(path)) {
                case FILE -> {
                    if (writable(root, path)) keys.add(name);
                }
                case LINKS -> keys.add(name);
                case DIRECTORY -> {
                    if (!top && !NAMED_HERE.contains(name)) keys.add(name);
                    walk(root, path, keys);
                }
            }
        }
    }

    /** Whether a write may be taken: the file's own value written back, refused as read-only or not. */
    private static boolean writable(ConfigTree root, String path) throws ControlException {
        try {
            String value = root.read(path);
            root.write(path, value.isEmpty() ? "0" : value);     // an empty write is taken even by a read-only file, as in Linux
            return true;
        } catch (ControlException e) {
            // The trees answer EACCES; a cgroup interface file answers EINVAL "... is read-only", as Linux 6.1 does.
            return e.errno() != Errno.EACCES && !e.getMessage().endsWith(" is read-only");
        }
    }
}
