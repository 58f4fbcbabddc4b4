package termmd

import "charm.land/lipgloss/v2"

// styles are the looks of a palette's elements.
type styles struct {
	title, heading lipgloss.Style
	code, link     lipgloss.Style
	quote, marker  lipgloss.Style
}

var dark, light = newStyles("75", "203", "39", "245"), newStyles("25", "161", "26", "242")

func newStyles(heading, code, link, dim string) *styles {
	h := lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color(heading))
	return &styles{
		title:   h.Underline(true),
		heading: h,
		code:    lipgloss.NewStyle().Foreground(lipgloss.Color(code)),
		link:    lipgloss.NewStyle().Underline(true).Foreground(lipgloss.Color(link)),
		quote:   lipgloss.NewStyle().Foreground(lipgloss.Color(dim)),
		marker:  lipgloss.NewStyle().Foreground(lipgloss.Color(heading)),
	}
}

func palette(isDark bool) *styles {
	if isDark {
		return dark
	}
	return light
}
