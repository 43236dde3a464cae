package io.iotarget.testkit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EtcdClusterTest {
    @TempDir
    Path dir;

    private static String etcdctl(String endpoints, String... args) throws Exception {
        String[] command = new String[args.length + 4];
        command[0] = "/usr/bin/etcdctl";
        command[1] = "--endpoints=" + endpoints;
        command[2] = "--command-timeout=5s";
        command[3] = "--dial-timeout=2s";
        System.arraycopy(args, 0, command, 4, args.length);
        return Tools.ok(30, command);
    }

    @Test
    void killedLeaderIsReplacedAndRestartedMemberRejoinsWithItsData() throws Exception {
        Tools.require("etcdctl", "/usr/bin/etcdctl");
        try (EtcdCluster etcd = EtcdCluster.start(dir)) {
            assertEquals(3, etcd.size());
            assertTrue(etcd.uri().startsWith("etcd://127.0.0.1:"), etcd.uri());
            String all = String.join(",", etcd.endpoints());
            etcdctl(all, "put", "/k", "v1");

            int leader = etcd.leader();
            assertTrue(leader >= 0, "a leader after start");
            etcd.kill(leader);
            Await.until(Duration.ofSeconds(10), () -> {
                try {
                    int now = etcd.leader();
                    return now >= 0 && now != leader;
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }, () -> "no new leader after killing member " + leader);
            etcdctl(all, "put", "/k", "v2");                  // two of three still make a quorum

            etcd.restart(leader);
            etcd.awaitHealthy(leader);
            String mine = etcd.endpoints().get(leader);
            assertTrue(etcdctl(mine, "get", "/k").contains("v2"), "the restarted member caught up through its own endpoint");
        }
    }

    @Test
    void stoppedMemberIsSilentUntilContinued() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(dir)) {
            int follower = (etcd.leader() + 1) % etcd.size();
            etcd.stop(follower);
            assertFalse(etcd.healthy(follower), "a stopped member answers nothing");
            assertTrue(etcd.alive(follower));
            etcd.cont(follower);
            etcd.awaitHealthy(follower);
            assertNotEquals(-1, etcd.leader());
        }
    }
}
