package io.iotarget.control;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.library.dependencies.SliceRule;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 30 item 1: no package of a module depends, through any chain, on a package that depends
 * on it — each module's packages are layers. Read from the compiled main classes (as
 * {@code jdeps -verbose:package} reads them), one module at a time, for every module on
 * control's test classpath: every module of the server, and testkit. (stress-tests and
 * bench/jmh are harnesses, built after control; they are not read.)
 *
 * <p>A ratchet: the test fails on any cycle not in {@link #KNOWN}, and on any entry of
 * {@link #KNOWN} that is no longer exactly a cycle (its packages no longer all reach each
 * other), so the list only shrinks. Left today: iocontrol's {root, chain, file, policy}, which
 * a later part of issue 30 breaks.
 */
class PackageCycleTest {
    /**
     * Cycles known to be there, by module (its directory): each a strongly connected set of
     * packages (relative to io.iotarget) and the issue that breaks it. Remove an entry when
     * its cycle is broken; never add one.
     */
    private static final Map<String, List<KnownCycle>> KNOWN = Map.of(
            // The policy interfaces (policy.IoPolicy, DevicePolicy, PolicyHost) name the
            // controller's Group, DeviceGroup and chain.DeviceControl, the interface files
            // (file.InterfaceFile, DeviceLine) name them and PolicyHost, and those name the
            // chain and the policies in turn.
            "iocontrol", List.of(new KnownCycle("issue 30 item 3: policies see devices through an interface of their own",
                    "iocontrol", "iocontrol.chain", "iocontrol.file", "iocontrol.policy")));


    private static final String ROOT_PACKAGE = "io.iotarget";

    @Test
    void noModuleHasAPackageCycleBeyondTheKnownOnes() throws IOException {
        Map<String, JavaClasses> modules = mainClassesByModule();
        List<String> failures = new ArrayList<>();
        for (String module : KNOWN.keySet()) {
            if (!modules.containsKey(module)) failures.add(module + ": not on the test classpath, but listed in KNOWN");
        }
        for (Map.Entry<String, JavaClasses> e : modules.entrySet()) {
            String module = e.getKey();
            JavaClasses classes = e.getValue();
            List<KnownCycle> known = KNOWN.getOrDefault(module, List.of());

            // Any cycle beyond the known ones: a known cycle's inner dependencies are left out,
            // so what remains is a cycle through at least one other package.
            SliceRule rule = slices().matching(ROOT_PACKAGE + ".(**)").should().beFreeOfCycles();
            for (KnownCycle cycle : known) rule = rule.ignoreDependency(cycle.member(), cycle.member());
            EvaluationResult result = rule.evaluate(classes);
            if (result.hasViolation()) failures.add(module + ": " + result.getFailureReport());

            // Each known cycle still exactly a cycle, by its own dependencies.
            Map<String, Set<String>> edges = packageEdges(classes);
            for (KnownCycle cycle : known) {
                for (String from : cycle.packages()) {
                    Set<String> unreached = new TreeSet<>(cycle.packages());
                    unreached.removeAll(reachableWithin(from, cycle.packages(), edges));
                    if (!unreached.isEmpty()) {
                        failures.add(module + ": the known cycle " + cycle.packages() + " (" + cycle.brokenBy()
                                + ") is broken: " + from + " no longer reaches " + unreached
                                + "; take it (or the packages no longer in it) out of KNOWN");
                        break;
                    }
                }
            }
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }

    /**
     * Every module's main classes, by module: each class-path root that holds io/iotarget is
     * one module's target/classes (or, outside a reactor build, its jar), named by its
     * directory (backends, frontend-nvmetcp); test classes are left out.
     */
    private static Map<String, JavaClasses> mainClassesByModule() throws IOException {
        Map<String, JavaClasses> modules = new TreeMap<>();
        ClassFileImporter importer = new ClassFileImporter();
        for (URL root : Collections.list(PackageCycleTest.class.getClassLoader()
                .getResources(ROOT_PACKAGE.replace('.', '/')))) {
            String location = root.toString();
            if (location.contains("/test-classes/")) continue;
            String module;
            int classes = location.indexOf("/target/classes/");
            if (classes >= 0) {
                module = location.substring(location.lastIndexOf('/', classes - 1) + 1, classes);
            } else {
                // jar:file:/.../iotarget-backends-0.1.0-SNAPSHOT.jar!/io/iotarget
                String jar = location.substring(location.lastIndexOf('/', location.indexOf(".jar!")) + 1,
                        location.indexOf(".jar!"));
                module = jar.replaceFirst("^iotarget-", "").replaceFirst("-\\d.*$", "");
            }
            modules.put(module, importer.importUrl(root));
        }
        return modules;
    }

    /** Package to the packages of io.iotarget its classes depend on (itself left out). */
    private static Map<String, Set<String>> packageEdges(JavaClasses classes) {
        Map<String, Set<String>> edges = new HashMap<>();
        for (JavaClass c : classes) {
            String from = relative(c.getPackageName());
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                String target = d.getTargetClass().getBaseComponentType().getPackageName();
                if (!target.startsWith(ROOT_PACKAGE + ".")) continue;
                String to = relative(target);
                if (!to.equals(from)) edges.computeIfAbsent(from, k -> new HashSet<>()).add(to);
            }
        }
        return edges;
    }

    /** The packages of {@code within} that {@code from} reaches by edges that stay in it. */
    private static Set<String> reachableWithin(String from, Set<String> within, Map<String, Set<String>> edges) {
        Set<String> seen = new HashSet<>(Set.of(from));
        List<String> todo = new ArrayList<>(List.of(from));
        while (!todo.isEmpty()) {
            for (String to : edges.getOrDefault(todo.removeLast(), Set.of())) {
                if (within.contains(to) && seen.add(to)) todo.add(to);
            }
        }
        return seen;
    }

    private static String relative(String packageName) {
        return packageName.substring(ROOT_PACKAGE.length() + 1);
    }

    /** A cycle left for later: its packages (relative to io.iotarget) and the issue that breaks it. */
    private record KnownCycle(String brokenBy, Set<String> packages) {
        KnownCycle(String brokenBy, String... packages) {
            this(brokenBy, Set.of(packages));
        }

        /** A class in one of the cycle's packages. */
        DescribedPredicate<JavaClass> member() {
            return DescribedPredicate.describe("in " + packages,
                    c -> c.getPackageName().startsWith(ROOT_PACKAGE + ".")
                            && packages.contains(relative(c.getPackageName())));
        }
    }
}
