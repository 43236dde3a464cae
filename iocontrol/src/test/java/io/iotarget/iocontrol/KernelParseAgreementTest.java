package io.iotarget.iocontrol;

import io.iotarget.model.ControlException;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays kernel-writes/corpus.txt against iotarget and compares every answer (accepted, or
 * which errno) and the file's contents after it with what Linux 6.1 answered
 * (kernel-writes/kernel-answers.txt, recorded in the guest by kernel-writes/record.sh). The only
 * differences allowed are the corpus's {@code iotarget=ANSWER} lines, iotarget's deliberate
 * choices listed in docs/decisions.md (mostly refusals of what the kernel accepts by accident);
 * each must still be a difference, in the answer or in the contents after it, so the list
 * cannot go stale. After such a line only the next lines' contents are compared,
 * so the corpus puts them where the kernel's acceptance changes nothing.
 */
class KernelParseAgreementTest {
    /** One write; {@code padTo} > 0 appends spaces up to that many bytes, counted after @DEV is replaced, as the guest does. */
    private record Case(int n, String file, String text, int padTo, String iotargetAnswer) {
    }

    private record Answer(String result, String after) {
    }

    @Test
    void shouldAnswerEveryWriteAsLinuxDoesExceptTheDocumentedRefusals() throws Exception {
        List<Case> cases = corpus();
        List<Answer> kernel = kernelAnswers();
        assertEquals(cases.size(), kernel.size(), "kernel-answers.txt is stale: run record.sh");

        ControllerHarness h = new ControllerHarness();
        h.group("t");
        String dev = h.dev0.number().toString();
        List<String> differences = new ArrayList<>();
        int deliberate = 0;
        for (Case c : cases) {
            String path = c.file.startsWith("io.cost.") ? c.file : "t/" + c.file;
            String text = c.text.replace("@DEV", dev).replace("@MAJ", Integer.toString(h.dev0.number().major()));
            if (c.padTo > 0) text = text + " ".repeat(c.padTo - text.length());
            String result;
            try {
                h.controller.write(path, text);
                result = "ok";
            } catch (ControlException e) {
                result = e.errno().name();
            }
            String after = h.controller.read(path).replace(dev, "@DEV").replace('\n', '|');
            Answer linux = kernel.get(c.n - 1);
            String where = "#" + c.n + " " + c.file + " '" + c.text.replace("\n", "\\n") + "'";
            if (c.iotargetAnswer != null) {
                deliberate++;
                if (!result.equals(c.iotargetAnswer)) differences.add(where + ": iotarget " + result + ", expected its deliberate " + c.iotargetAnswer);
                if (linux.result.equals(result) && linux.after.equals(after)) differences.add(where + ": marked deliberate, but Linux does the same");
                continue;
            }
            if (!result.equals(linux.result)) differences.add(where + ": iotarget " + result + ", Linux " + linux.result);
            else if (!after.equals(linux.after)) differences.add(where + ": afterwards iotarget shows '" + after + "', Linux '" + linux.after + "'");
        }
        System.out.printf("kernel parse agreement: %d writes, %d identical, %d deliberate refusals, %d differences%n",
                cases.size(), cases.size() - deliberate - differences.size(), deliberate, differences.size());
        assertTrue(differences.isEmpty(), String.join("\n", differences));
    }

    private static List<Case> corpus() throws IOException {
        List<Case> cases = new ArrayList<>();
        for (String line : resource("corpus.txt")) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] col = line.split("\t", -1);
            int padTo = 0;
            String iotarget = null;
            for (String option : col.length > 2 ? col[2].split(" ") : new String[0]) {
                if (option.startsWith("pad=")) padTo = Integer.parseInt(option.substring("pad=".length()));
                else if (option.startsWith("iotarget=")) iotarget = option.substring("iotarget=".length());
            }
            cases.add(new Case(cases.size() + 1, col[0], unescape(col[1]), padTo, iotarget));
        }
        return cases;
    }

    private static List<Answer> kernelAnswers() throws IOException {
        List<Answer> answers = new ArrayList<>();
        for (String line : resource("kernel-answers.txt")) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] col = line.split("\t", -1);
            assertEquals(answers.size() + 1, Integer.parseInt(col[0]), "kernel-answers.txt out of order");
            answers.add(new Answer(col[1], col[2]));
        }
        return answers;
    }

    private static List<String> resource(String name) throws IOException {
        try (InputStream in = KernelParseAgreementTest.class.getResourceAsStream("/kernel-writes/" + name)) {
            if (in == null) throw new IOException("no resource kernel-writes/" + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
    }

    /** The printf %b escapes the corpus uses: \n \t \r \v \f \\ \xHH. */
    static String unescape(String s) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i + 1 == s.length()) {
                out.append(c);
                continue;
            }
            char e = s.charAt(++i);
            switch (e) {
                case 'n' -> out.append('\n');
                case 't' -> out.append('\t');
                case 'r' -> out.append('\r');
                case 'v' -> out.append('\u000b');
                case 'f' -> out.append('\f');
                case '\\' -> out.append('\\');
                case 'x' -> {
                    int end = i + 1;
                    while (end < s.length() && end < i + 3 && Character.digit(s.charAt(end), 16) >= 0) end++;
                    out.append((char) Integer.parseInt(s.substring(i + 1, end), 16));
                    i = end - 1;
                }
                default -> throw new IllegalArgumentException("unknown escape \\" + e + " in " + s);
            }
        }
        return out.toString();
    }
}
