package io.iotarget.iocontrol;

import io.iotarget.model.ControlException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays kernel-writes/io-latency-from-source.txt against io.latency: every answer (accepted,
 * or which errno) and the file after it must be what Linux 6.1's source says, except the lines
 * marked {@code iotarget=ANSWER} (docs/decisions.md), which must still differ. The answers are
 * read from the kernel's source, not recorded, because the guest's kernel lacks io.latency (see
 * the file's header); KernelParseAgreementTest holds the recorded corpus.
 */
class IoLatencyParseAgreementTest {
    @Test
    void shouldAnswerEveryWriteAsLinuxsSourceSaysExceptTheDocumentedRefusals() throws Exception {
        ControllerHarness h = new ControllerHarness();
        h.group("t");
        String dev = h.dev0.number().toString();
        List<String> differences = new ArrayList<>();
        int n = 0;
        for (String line : lines()) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            n++;
            String[] col = line.split("\t", -1);
            String text = KernelParseAgreementTest.unescape(col[0]).replace("@DEV", dev);
            String linuxResult = col[1];
            String linuxAfter = col[2];
            String deliberate = col.length > 3 && col[3].startsWith("iotarget=") ? col[3].substring("iotarget=".length()) : null;
            String result;
            try {
                h.controller.write("t/io.latency", text);
                result = "ok";
            } catch (ControlException e) {
                result = e.errno().name();
            }
            String after = h.controller.read("t/io.latency").replace(dev, "@DEV").replace('\n', '|');
            String where = "#" + n + " '" + col[0] + "'";
            if (deliberate != null) {
                if (!result.equals(deliberate)) differences.add(where + ": iotarget " + result + ", expected its deliberate " + deliberate);
                if (result.equals(linuxResult) && after.equals(linuxAfter)) differences.add(where + ": marked deliberate, but Linux does the same");
            } else if (!result.equals(linuxResult)) {
                differences.add(where + ": iotarget " + result + ", Linux " + linuxResult);
            } else if (!after.equals(linuxAfter)) {
                differences.add(where + ": afterwards iotarget shows '" + after + "', Linux '" + linuxAfter + "'");
            }
        }
        System.out.printf("io.latency parse agreement (from the kernel source): %d writes, %d differences%n", n, differences.size());
        assertTrue(n > 30, "the file was read");
        assertTrue(differences.isEmpty(), String.join("\n", differences));
    }

    private static List<String> lines() throws IOException {
        try (InputStream in = IoLatencyParseAgreementTest.class.getResourceAsStream("/kernel-writes/io-latency-from-source.txt")) {
            if (in == null) throw new IOException("no resource kernel-writes/io-latency-from-source.txt");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
    }
}
