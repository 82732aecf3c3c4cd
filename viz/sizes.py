"""Sizes in pixels the panel grids are laid out with (no imports: ui.chart reads TICK_PX on the app's start-up path)."""

CHAR_PX = 7  # width of one tick-label character at Plotly's default 12 px font
NOMINAL_WIDTH_PX = 1100  # the main column of the wide layout, to turn pixels into paper units
TITLE_PX = 26  # room above a panel for its title
TICK_PX = 14  # room along an axis for one rotated tick label
# Labelled keys are chosen when the figure is built (tickvals), for a chart this wide (a ~1900 px window with
# the sidebar open); a narrower chart keeps every k-th of them as drawn, so that none overlap (ui.chart's
# fitKeyLabels). The hover names every key.
TICK_WIDTH_PX = 1600
# The narrowest chart (a 1400 px window with the sidebar open) in which a grid should label every key: fewer panels
# go to a row where that makes room for each key's label (viz.panels.labelled_columns).
LABELLED_WIDTH_PX = 1000
# A panel title's characters at 14 px (measured in Chromium: 6–7.3 px), and the room kept between two titles. A
# grid whose titles need more than its column (a phone) is laid out again for the column (NARROW_PX below).
TITLE_CHAR_PX = 6.5
TITLE_PAD_PX = 12
MIN_PANEL_PX = 48  # and no panel narrower than this
# A grid of panels too wide for a column narrower than this (a phone) reports the column's width, and the page lays
# it out for that width (fewer panels to a row, gaps in pixels of that width); wider columns use NOMINAL_WIDTH_PX.
NARROW_PX = 700
