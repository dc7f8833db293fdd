// Tile width of the demo project, set by its build (CMakeLists.txt), never by a default here.
#pragma once
#ifndef KC_TILE
#error "KC_TILE must be defined by the build"
#endif
constexpr int kc_tile = KC_TILE;
