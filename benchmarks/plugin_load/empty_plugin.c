/* The baseline of benchmarks/plugin_load.sh: a plugin with nothing in it, so what loading it costs
 * is the fork and the loader's fixed work, not a plugin's. */
int init(void) { return 0; }
