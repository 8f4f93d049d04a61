/**
 * Routing profiles from YAML (needs the optional snakeyaml-engine dependency), validated like profiles in code.
 */
package io.kvidx.routing.yaml;
