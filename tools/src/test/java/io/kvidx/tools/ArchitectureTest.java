package io.kvidx.tools;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.regex.Pattern;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The module map (docs/adr/0017-module-map.md) as rules over the main classes of every kvidx module on this test
 * class path: native, sbe-schemas, ipc-client, routing, tokenize, daemon, tools and (test scope, for this test)
 * router, with what they bring (serve, through the daemon). Test classes (test-classes directories and test-jars)
 * and third-party classes are not imported. Each rule was shown to fail on a planted violation.
 */
@Timeout(120)
class ArchitectureTest {
    /** Test-jars (the daemon's, on this class path for the tools tests) hold test classes too. */
    private static final ImportOption DO_NOT_INCLUDE_TEST_JARS =
        location -> !location.matches(Pattern.compile(".*-tests\\.jar.*"));

    private static JavaClasses mainClasses;

    @BeforeAll
    static void importMainClasses() {
        mainClasses = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(DO_NOT_INCLUDE_TEST_JARS)
            .importPackages("io.kvidx");
    }

    @Test
    void shouldImportTheMainClassesOfEveryModuleAndNoTestClass() {
        for (final String name : new String[] {"io.kvidx.ffm.Layouts", "io.kvidx.client.index.IndexReader",
            "io.kvidx.client.publish.KvEventPublisher", "io.kvidx.routing.Router", "io.kvidx.tokenize.TokenizePreparer",
            "io.kvidx.daemon.lifecycle.KvidxDaemon", "io.kvidx.tools.ToolsCli", "io.kvidx.router.RouterServer"}) {
            assertTrue(mainClasses.contain(name), name);
        }
        assertFalse(mainClasses.contain(ArchitectureTest.class.getName()));
        assertFalse(mainClasses.contain("io.kvidx.daemon.routing.IndexRoutingTest"), "the daemon's test-jar");
    }

    @Test
    void shouldHaveNoPackageCycleInsideTheDaemon() {
        noCycles("daemon").check(mainClasses);
    }

    @Test
    void shouldHaveNoPackageCycleInsideTheIndexClient() {
        noCycles("client").check(mainClasses);
    }

    @Test
    void shouldHaveNoPackageCycleInsideRouting() {
        noCycles("routing").check(mainClasses);
    }

    @Test
    void shouldHaveNoPackageCycleInsideTheRouter() {
        noCycles("router").check(mainClasses);
    }

    @Test
    void shouldHaveNoPackageCycleInsideTools() {
        noCycles("tools").check(mainClasses);
    }

    @Test
    void shouldHaveNoPackageCycleInsideServe() {
        // Serve reaches this class path through the daemon's dependency on it; allowed empty until that is committed.
        noCycles("serve").allowEmptyShould(true).check(mainClasses);
    }

    @Test
    void shouldKeepTheIndexClientOnTheJdkAndNativeModule() {
        classes().that().resideInAPackage("io.kvidx.client..")
            .and().resideOutsideOfPackage("io.kvidx.client.publish..")
            .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "io.kvidx.ffm..", "io.kvidx.client..")
            .because("the index client's read path is JDK only (ADR 0017)")
            .check(mainClasses);
    }

    @Test
    void shouldKeepAeronAndSbeInTheIndexClientsPublisher() {
        classes().that().resideInAPackage("io.kvidx.client.publish..")
            .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "io.kvidx.ffm..", "io.kvidx.client..",
                "io.aeron..", "org.agrona..", "io.kvidx.sbe..")
            .because("only the optional event publisher may use Aeron and the SBE codecs (ADR 0017)")
            .check(mainClasses);
    }

    @Test
    void shouldKeepTheDaemonFreeOfRoutingTokenizeToolsAndRouter() {
        noClasses().that().resideInAPackage("io.kvidx.daemon..")
            .should().dependOnClassesThat().resideInAnyPackage("io.kvidx.routing..", "io.kvidx.tokenize..",
                "io.kvidx.tools..", "io.kvidx.router..")
            .because("kvidx-daemon.jar is the daemon alone (ADR 0017)")
            .check(mainClasses);
    }

    @Test
    void shouldKeepRoutingFreeOfDaemonRouterTokenizeAndNetty() {
        noClasses().that().resideInAPackage("io.kvidx.routing..")
            .should().dependOnClassesThat().resideInAnyPackage("io.kvidx.daemon..", "io.kvidx.router..",
                "io.kvidx.tokenize..", "io.netty..")
            .because("the decision layer reads the index through the index client only (ADR 0017)")
            .check(mainClasses);
    }

    @Test
    void shouldKeepTheIndexClientFreeOfOtherKvidxModules() {
        // The SBE codecs (io.kvidx.sbe, sbe-schemas) are allowed here for the publisher alone: see the rule above.
        noClasses().that().resideInAPackage("io.kvidx.client..")
            .should().dependOnClassesThat(resideInAPackage("io.kvidx..")
                .and(not(resideInAnyPackage("io.kvidx.client..", "io.kvidx.ffm..", "io.kvidx.sbe.."))))
            .because("the index client knows nothing of routing or any other kvidx module but native (ADR 0017)")
            .check(mainClasses);
    }

    /**
     * @param module the module's package under io.kvidx ({@code client} for ipc-client).
     * @return a rule: no cycle between the module's packages, each package its own slice, the module's root package
     * included ({@code matching("io.kvidx.routing.(**)")} would leave io.kvidx.routing itself out, and find no
     * slice at all in a one-package module such as the router).
     */
    private static ArchRule noCycles(final String module) {
        final String root = "io.kvidx." + module;
        return slices().assignedFrom(new SliceAssignment() {
            @Override
            public SliceIdentifier getIdentifierOf(final JavaClass javaClass) {
                final String name = javaClass.getPackageName();
                return name.equals(root) || name.startsWith(root + ".")
                    ? SliceIdentifier.of(name) : SliceIdentifier.ignore();
            }

            @Override
            public String getDescription() {
                return "the packages of " + root;
            }
        }).should().beFreeOfCycles();
    }
}
