/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replacements: copy a value from a source object's field into fields of target objects.
 */
#include "kz_int.h"

#include "co/error.h"

int kz_replacements(kz_dir *d, kz_resmap *ra);

int kz_replacements(kz_dir *d, kz_resmap *ra)
{
    (void)ra;
    json_object *list = NULL;
    json_object_object_get_ex(kz_dir_kustomization(d), "replacements", &list);
    if (list && json_object_is_type(list, json_type_array) && json_object_array_length(list)) {
        return co_error_set(CO_EUNSUPPORTED, "%s: replacements are not supported yet",
                            kz_dir_file(d));
    }
    return 0;
}
