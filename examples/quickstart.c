/* The README's C example as a complete program. ctest builds and runs it (natively and as
 * wasm), so the README cannot drift from the API. */
#include "tessera.h"

#include <stdio.h>

/* Stops the example with the result's name when a call fails. */
#define TRY(call)                                                                \
    do {                                                                         \
        tes_result_t result_ = (call);                                           \
        if (result_ != TES_OK) {                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, tes_result_name(result_)); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(void) {
    tes_world_t *world;
    TRY(tes_world_create(NULL, &world));
    tes_field_desc_t xy[] = {{"x", TES_F32, 1}, {"y", TES_F32, 1}};
    tes_component_t position, velocity;
    TRY(tes_component_register(world, &(tes_component_desc_t){"Position", xy, 2}, &position));
    TRY(tes_component_register(world, &(tes_component_desc_t){"Velocity", xy, 2}, &velocity));
    tes_entity_t e;
    TRY(tes_spawn(world, (tes_component_t[]){position, velocity}, 2, &e)); /* fields start at 0 */
    TRY(tes_set_number(world, e, velocity, 0, 0, 2.5));                    /* Velocity.x = 2.5 */

    double vx;
    TRY(tes_get_number(world, e, velocity, 0, 0, &vx));
    printf("entity %u: Velocity.x = %g\n", (unsigned)e, vx);
    TRY(tes_despawn(world, e));
    if (tes_despawn(world, e) != TES_ERR_STALE_ENTITY) return 1; /* the handle is now stale */
    tes_world_destroy(world);
    return vx == 2.5 ? 0 : 1;
}
